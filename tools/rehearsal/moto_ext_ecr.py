# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ECR additions to moto server for the trainium.eks rehearsal (see moto_ext.py).

The rehearsal's ECR data plane is its local OCI registry
(tools/rehearsal/services/registry.sh), as EKS's endpoint is the local
kube-apiserver (moto_ext_eks.py). moto answers GetAuthorizationToken with a
made-up password and a proxyEndpoint at *.dkr.ecr.<region>.amazonaws.com, and
every repositoryUri points there too; nothing could push to them. With the
registry known:

1. GetAuthorizationToken answers, for each registry ID asked (the caller's
   account when none), ``authorizationToken`` = base64 of ``AWS:<password of
   the rehearsal registry>`` (the registry's htpasswd has the user ``AWS``, as
   ECR's token user is always AWS), ``proxyEndpoint`` =
   ``https://127.0.0.1:<registry port>`` and ``expiresAt`` 12 hours ahead, the
   token's lifetime on AWS.
2. CreateRepository / DescribeRepositories (and every other answer carrying a
   repository) give ``repositoryUri`` = ``127.0.0.1:<port>/<name>``.

Both are read at request time, so moto can start before the registry: the
registry is ``$TRAINIUM_REHEARSAL_REGISTRY`` (host:port, exported by
registry.sh) or ``$TRAINIUM_REGISTRY`` (env.sh's); the password is read from
``$TRAINIUM_REHEARSAL_REGISTRY_PASSWORD_FILE``, ``$STATE/registry/password``
or ``$TRAINIUM_REHEARSAL_DIR/registry/password``, else taken from
``$TRAINIUM_REGISTRY_PASSWORD``. Without a registry (a moto-only stack) both
answers stay moto's own.
"""

from __future__ import annotations

import base64
import datetime
import os

TOKEN_LIFETIME = datetime.timedelta(hours=12)


def rehearsal_registry():
    """host:port of the rehearsal registry, or None when this moto has none."""
    return os.environ.get("TRAINIUM_REHEARSAL_REGISTRY") or os.environ.get("TRAINIUM_REGISTRY") or None


def _password_files():
    explicit = os.environ.get("TRAINIUM_REHEARSAL_REGISTRY_PASSWORD_FILE")
    if explicit:
        yield explicit
    for variable in ("STATE", "TRAINIUM_REHEARSAL_DIR"):
        if os.environ.get(variable):
            yield os.path.join(os.environ[variable], "registry", "password")


def rehearsal_registry_password():
    """The registry password (read now: the registry may start after moto), or None."""
    for path in _password_files():
        try:
            with open(path, encoding="utf-8") as handle:
                password = handle.read().strip()
        except OSError:
            continue
        if password:
            return password
    return os.environ.get("TRAINIUM_REGISTRY_PASSWORD") or None


def authorization_data(registry_ids, password, registry, now=None):
    """GetAuthorizationToken's authorizationData for the rehearsal registry."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    token = base64.b64encode(f"AWS:{password}".encode()).decode("ascii")
    return [
        {"authorizationToken": token, "expiresAt": now + TOKEN_LIFETIME, "proxyEndpoint": f"https://{registry}"}
        for _registry_id in registry_ids
    ]


def _get_authorization_token(original):
    def call(self):
        registry = rehearsal_registry()
        password = rehearsal_registry_password()
        if not (registry and password):
            return original(self)
        from moto.core.responses import ActionResult  # pylint: disable=import-outside-toplevel

        registry_ids = self._get_param("registryIds") or [self.current_account]  # pylint: disable=protected-access
        return ActionResult({"authorizationData": authorization_data(registry_ids, password, registry)})

    return call


def _uri_property():
    def get(self):
        registry = rehearsal_registry()
        if registry:
            return f"{registry}/{self.name}"
        return self.__dict__.get("_trainium_moto_uri")

    def put(self, value):
        self.__dict__["_trainium_moto_uri"] = value

    return property(get, put)


def install():
    from moto.ecr.models import Repository  # pylint: disable=import-outside-toplevel
    from moto.ecr.responses import ECRResponse  # pylint: disable=import-outside-toplevel

    Repository.uri = _uri_property()
    ECRResponse.get_authorization_token = _get_authorization_token(ECRResponse.get_authorization_token)
