# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Image references pinned by digest: what a tag names today, asked of its
registry through the OCI distribution API (``HEAD /v2/<name>/manifests/<tag>``,
the ``Docker-Content-Digest`` answer), with the two logins registries ask for:

- ``Bearer``: an anonymous token from the challenge's realm (public.ecr.aws,
  quay.io, Docker Hub), sent with basic credentials when there are some;
- ``Basic``: the login the caller gives (ECR, and the rehearsal's ECR stand-in,
  take the user ``AWS`` and the token of ecr:GetAuthorizationToken).

A mirror answers for a registry (``{"public.ecr.aws": "mirror.example.com/ecr-public"}``):
the digest is read there, the reference keeps the registry's name (a digest
names the same content in any registry that holds it).

Standard library and ansible's ``open_url`` only: the module runs in the
execution environment, which has no HTTP client library of its own to rely on.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import urllib.error
import urllib.parse

from ansible.module_utils.urls import open_url

from ansible_collections.trainium.eks.plugins.module_utils.trainium_image import MANIFEST_ACCEPT

DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
# name[:tag][@digest]; the name's first component is a registry host when it has a dot or a port, or is localhost.
REFERENCE_RE = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._:/-]*?)(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$")
CHALLENGE_RE = re.compile(r'(\w+)="([^"]*)"')


class DigestError(Exception):
    """A reference that cannot be pinned, with the reason."""


def parse_reference(reference):
    """(registry, repository, tag, digest) of an image reference; Docker Hub's short names are expanded."""
    match = REFERENCE_RE.match(str(reference or ""))
    if not match:
        raise DigestError(f"{reference!r} is not an image reference such as public.ecr.aws/neuron/neuron-monitor:1.3.0")
    name, tag, digest = match.group("name", "tag", "digest")
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first, rest
    else:
        registry, repository = "docker.io", name if sep else "library/" + name
    if not tag and not digest:
        raise DigestError(f"{reference!r} names neither a tag nor a digest")
    return registry, repository, tag, digest


def pinned(reference, digest):
    """``name:tag@digest`` (the tag kept for people; the digest is what is pulled)."""
    return reference.split("@", 1)[0] + "@" + digest


def _endpoint(registry, repository, mirrors):
    """(host, repository path) where the manifest is read: the mirror's when one is given for the registry.

    ``"*"`` is the mirror of every other registry, which holds each under its host's name
    (``<mirror>/<registry host>/<repository>``)."""
    mirrors = mirrors or {}
    mirror = mirrors.get(registry)
    if not mirror and mirrors.get("*"):
        mirror = str(mirrors["*"]).rstrip("/") + "/" + registry
    if not mirror:
        return ("registry-1.docker.io" if registry == "docker.io" else registry), repository
    host, _sep, prefix = str(mirror).split("://", 1)[-1].rstrip("/").partition("/")
    return host, (prefix + "/" + repository) if prefix else repository


def same_domain(realm_host, registry_host):
    """Whether a token realm's host belongs to the registry: the same host, or the same last two labels
    (auth.docker.io for registry-1.docker.io)."""
    if not realm_host:
        return False
    registry = registry_host.split(":", 1)[0]
    return realm_host == registry or realm_host.split(".")[-2:] == registry.split(".")[-2:]


def _challenge(headers):
    """(scheme, params) of a WWW-Authenticate header."""
    value = (headers or {}).get("WWW-Authenticate") or ""
    scheme, _sep, rest = value.strip().partition(" ")
    return scheme.lower(), dict(CHALLENGE_RE.findall(rest))


class Resolver:
    """Reads digests; ``basic_login(host)`` gives (user, password) for a registry that asks for basic auth, or None."""

    def __init__(self, mirrors=None, ca_path=None, basic_login=None, opener=open_url, timeout=30):
        self.mirrors = mirrors or {}
        self.ca_path = ca_path
        self.basic_login = basic_login or (lambda host: None)
        self.opener = opener
        self.timeout = timeout

    def _open(self, url, method, headers):
        try:
            # A redirect (to a blob store, say) never carries the login on.
            answer = self.opener(url, method=method, headers=headers, timeout=self.timeout, ca_path=self.ca_path,
                                 use_netrc=False, unredirected_headers=["Authorization"])
            return answer.status, answer.headers, answer
        except urllib.error.HTTPError as error:
            return error.code, error.headers, None
        except (urllib.error.URLError, OSError) as error:
            raise DigestError(f"{url.split('/v2/')[0]} did not answer {method} {url}: {getattr(error, 'reason', error)}") from None

    def _authorization(self, host, repository, headers):
        """The Authorization header the challenge asks for, or None when there is nothing to answer it with.

        A basic login is asked for, and sent, only when the registry itself challenges with Basic; a Bearer token is
        asked of the challenge's realm anonymously, and only of an https realm of the registry's own domain."""
        scheme, params = _challenge(headers)
        if scheme == "basic":
            login = self.basic_login(host)
            return "Basic " + base64.b64encode(f"{login[0]}:{login[1]}".encode("utf-8")).decode("ascii") if login else None
        realm = params.get("realm", "")
        if scheme != "bearer" or not realm.startswith("https://") or not same_domain(urllib.parse.urlsplit(realm).hostname, host):
            return None
        query = {"scope": f"repository:{repository}:pull"}
        if params.get("service"):
            query["service"] = params["service"]
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(query)
        status, _headers, answer = self._open(url, "GET", {})
        if status != 200 or answer is None:
            return None
        try:
            body = json.loads(answer.read().decode("utf-8"))
        except ValueError:
            return None
        token = body.get("token") or body.get("access_token")
        return f"Bearer {token}" if token else None

    def digest(self, reference):
        """The digest the reference's tag names now (the reference's own digest when it has one)."""
        registry, repository, tag, digest = parse_reference(reference)
        if digest:
            return digest
        host, path = _endpoint(registry, repository, self.mirrors)
        url = f"https://{host}/v2/{path}/manifests/{tag}"
        headers = {"Accept": MANIFEST_ACCEPT}
        status, answer_headers, answer = self._open(url, "HEAD", headers)
        if status == 401:
            authorization = self._authorization(host, path, answer_headers)
            if not authorization:
                raise DigestError(f"{host} asks for a login to read {path}:{tag} and none could be had")
            headers["Authorization"] = authorization
            status, answer_headers, answer = self._open(url, "HEAD", headers)
        if status == 404:
            raise DigestError(f"{host} has no {path}:{tag}" + (f" (the mirror of {registry})" if host != registry else ""))
        if status != 200:
            raise DigestError(f"{host} answered HTTP {status} to HEAD /v2/{path}/manifests/{tag}")
        found = (answer_headers or {}).get("Docker-Content-Digest")
        if not found:
            # A registry may leave the header out: the digest is the sha256 of the manifest's bytes.
            status, _answer_headers, answer = self._open(url, "GET", headers)
            if status != 200 or answer is None:
                raise DigestError(f"{host} answered HTTP {status} to GET /v2/{path}/manifests/{tag}")
            found = "sha256:" + hashlib.sha256(answer.read()).hexdigest()
        if not DIGEST_RE.match(found):
            raise DigestError(f"{host} gave {found!r} as the digest of {path}:{tag}; expected sha256:<64 hex digits>")
        return found


def pin_all(references, recorded, resolver):
    """({reference: pinned reference}, {reference: digest} to record, [references asked of a registry]).

    A reference with a digest is kept; a recorded one is not asked again (the
    record keeps a rerun from following a moved tag)."""
    images, record, asked = {}, dict(recorded or {}), []
    for reference in references:
        _registry, _repository, _tag, digest = parse_reference(reference)
        if digest:
            images[reference] = reference
            continue
        if not DIGEST_RE.match(str(record.get(reference) or "")):
            record[reference] = resolver.digest(reference)
            asked.append(reference)
        images[reference] = pinned(reference, record[reference])
    return images, record, asked
