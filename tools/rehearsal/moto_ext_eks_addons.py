# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS managed add-ons for moto server in the trainium.eks rehearsal (see moto_ext.py).

moto 5.2.5 answers 404 to every add-on operation, so trainium.eks.eks_addon
(the VPC CNI with an IAM role for its service account) had no server to talk
to. This adds, with the request and response shapes of the EKS API reference
(botocore's model routes and serializes them):

1. A catalogue (``CATALOGUE``) of the add-ons vpc-cni, coredns, kube-proxy
   and aws-ebs-csi-driver with realistic versions for Kubernetes 1.31 to
   1.35, exactly one of them marked ``defaultVersion`` per add-on and
   Kubernetes version. DescribeAddonVersions (GET /addons/supported-versions)
   answers it, filtered by kubernetesVersion (an add-on without a version for
   it is left out; compatibilities name only that version), addonName, types,
   publishers and owners, newest version first, paginated over add-ons
   (maxResults 1 to 100, InvalidParameterException otherwise). An unknown
   addonName gives an empty list.
2. CreateAddon (POST /clusters/{name}/addons), DescribeAddon and DeleteAddon
   (GET / DELETE /clusters/{name}/addons/{addonName}), ListAddons (GET
   /clusters/{name}/addons, paginated), UpdateAddon (POST
   /clusters/{name}/addons/{addonName}/update), with the errors AWS
   documents: ResourceNotFoundException for an unknown cluster or add-on;
   ResourceInUseException for a second add-on of a name and for UpdateAddon
   while the add-on is CREATING, UPDATING or DELETING;
   InvalidParameterException for an add-on the catalogue does not offer for
   the cluster's Kubernetes version, an addonVersion it does not offer
   ("Addon version specified is not supported"), a serviceAccountRoleArn that
   is not an IAM role ARN, configurationValues that are neither JSON nor YAML
   of a mapping (AWS also checks them against the add-on's schema; the
   rehearsal does not), a resolveConflicts outside OVERWRITE, NONE, PRESERVE,
   and podIdentityAssociations or namespaceConfig (not emulated). CreateAddon
   without addonVersion takes the default version. UpdateAddon changes only
   what it is sent (configurationValues "" removes the configuration; the
   API has no way to remove the role) and answers an Update of type
   AddonUpdate, InProgress, with its params.
3. Lifecycle. As on AWS, a new add-on is CREATING, an updated one UPDATING, a
   deleted one DELETING; here each lasts TRAINIUM_REHEARSAL_EKS_ADDON_SECONDS
   (default 2) seconds, then the add-on is ACTIVE (or gone), as moto_ext_fsx.py
   does for file systems. DeleteAddon with preserve answers the same way
   (the rehearsal runs no add-on software to keep).
4. Tags. TagResource, UntagResource and ListTagsForResource take add-on ARNs
   (arn:aws:eks:<region>:<account>:addon/<cluster>/<add-on>/<id>); moto's
   take cluster ARNs only.
5. Add-ons belong to their cluster: deleting the cluster deletes them, and a
   cluster created again under the same name has none.
6. Faults, as in moto_ext_faults.py: an add-on created with the tag
   ``rehearsal.trainium.eks/fault: create-failed`` ends CREATE_FAILED with the
   ConfigurationConflict health issue EKS reports next to a self-managed
   installation; with ``degraded`` it ends DEGRADED with
   InsufficientNumberOfReplicas (CoreDNS without nodes).
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import re
import time
import uuid

import yaml
from moto_ext_faults import FAULT_TAG

KUBERNETES_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35")
RESOLVE_CONFLICTS = ("OVERWRITE", "NONE", "PRESERVE")
BUSY_STATES = ("CREATING", "UPDATING", "DELETING")
ROLE_ARN_RE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
ADDON_ARN_RE = re.compile(r"^arn:[^:]+:eks:[^:]*:\d{12}:addon/(?P<cluster>[^/]+)/(?P<addon>[^/]+)/[^/]+$")

# add-on: (type, requiresIamPermissions, ((version, Kubernetes versions, the Kubernetes versions it is the default of), ...))
CATALOGUE = {
    "vpc-cni": ("networking", True, (
        ("v1.20.4-eksbuild.2", "1.31-1.35", "1.34 1.35"),
        ("v1.20.1-eksbuild.3", "1.31-1.35", ""),
        ("v1.19.6-eksbuild.7", "1.31-1.35", "1.33"),
        ("v1.19.5-eksbuild.3", "1.31-1.34", ""),
        ("v1.19.2-eksbuild.1", "1.31-1.33", "1.31 1.32"),
    )),
    "coredns": ("networking", False, (
        ("v1.13.1-eksbuild.1", "1.35", "1.35"),
        ("v1.12.4-eksbuild.1", "1.33-1.35", ""),
        ("v1.12.3-eksbuild.1", "1.33-1.34", "1.34"),
        ("v1.12.1-eksbuild.2", "1.33", "1.33"),
        ("v1.11.4-eksbuild.24", "1.31-1.32", ""),
        ("v1.11.4-eksbuild.2", "1.32", "1.32"),
        ("v1.11.3-eksbuild.1", "1.31", "1.31"),
    )),
    "kube-proxy": ("networking", False, (
        ("v1.35.0-eksbuild.2", "1.35", "1.35"),
        ("v1.34.1-eksbuild.2", "1.34", ""),
        ("v1.34.0-eksbuild.4", "1.34", "1.34"),
        ("v1.33.3-eksbuild.10", "1.33", ""),
        ("v1.33.0-eksbuild.2", "1.33", "1.33"),
        ("v1.32.6-eksbuild.12", "1.32", ""),
        ("v1.32.0-eksbuild.2", "1.32", "1.32"),
        ("v1.31.10-eksbuild.12", "1.31", ""),
        ("v1.31.3-eksbuild.2", "1.31", "1.31"),
    )),
    "aws-ebs-csi-driver": ("storage", True, (
        ("v1.53.0-eksbuild.1", "1.31-1.35", "1.35"),
        ("v1.48.0-eksbuild.2", "1.31-1.35", "1.33 1.34"),
        ("v1.45.0-eksbuild.2", "1.31-1.34", "1.31 1.32"),
    )),
}

FAULT_HEALTH = {
    "create-failed": ("CREATE_FAILED", {
        "code": "ConfigurationConflict",
        "message": "Conflicts found when trying to apply. Will not continue due to resolve conflicts mode. "
                   "Conflicts: DaemonSet.apps {workload} - .spec.template.spec.containers[name=\"{workload}\"].image",
    }),
    "degraded": ("DEGRADED", {
        "code": "InsufficientNumberOfReplicas",
        "message": "The add-on is unhealthy because it doesn't have the desired number of replicas.",
    }),
}


def _kubernetes_range(text):
    """'1.31-1.33' -> ('1.31', '1.32', '1.33'); '1.35' -> ('1.35',)."""
    low, high = (text.split("-") + [text])[:2]
    return tuple(v for v in KUBERNETES_VERSIONS if KUBERNETES_VERSIONS.index(low) <= KUBERNETES_VERSIONS.index(v) <= KUBERNETES_VERSIONS.index(high))


def _version_key(version):
    return tuple(int(number) for number in re.findall(r"\d+", version))


def versions_for(name, kubernetes_version):
    """{version: is default} of add-on ``name`` for a Kubernetes version (empty when not offered)."""
    _type, _iam, versions = CATALOGUE.get(name, (None, None, ()))
    return {version: kubernetes_version in defaults.split()
            for version, supported, defaults in versions if kubernetes_version in _kubernetes_range(supported)}


def addon_info(name, kubernetes_version=None):
    """DescribeAddonVersions' AddonInfo of add-on ``name``; None when it has no version for ``kubernetes_version``."""
    addon_type, iam, versions = CATALOGUE[name]
    entries = []
    for version, supported, defaults in sorted(versions, key=lambda v: _version_key(v[0]), reverse=True):
        clusters = [k for k in _kubernetes_range(supported) if kubernetes_version in (None, k)]
        if not clusters:
            continue
        entries.append({
            "addonVersion": version,
            "architecture": ["amd64", "arm64"],
            "computeTypes": ["ec2"],
            "compatibilities": [{"clusterVersion": k, "platformVersions": ["*"], "defaultVersion": k in defaults.split()} for k in clusters],
            "requiresConfiguration": False,
            "requiresIamPermissions": iam,
        })
    if not entries:
        return None
    return {"addonName": name, "type": addon_type, "addonVersions": entries, "publisher": "eks", "owner": "aws",
            "defaultNamespace": "kube-system"}


# ------------------------------------------------------------------ errors


def _errors():
    from moto.eks import exceptions  # pylint: disable=import-outside-toplevel

    return exceptions


def _not_found(message, cluster=None, addon=None):
    return _errors().ResourceNotFoundException(clusterName=cluster, nodegroupName=None, fargateProfileName=None, addonName=addon,
                                               message=message)


def _invalid(message, cluster=None, addon=None):
    return _errors().InvalidParameterException(clusterName=cluster, nodegroupName=None, fargateProfileName=None, addonName=addon,
                                               message=message)


def _in_use(message, cluster=None, addon=None):
    return _errors().ResourceInUseException(clusterName=cluster, nodegroupName=None, addonName=addon, message=message)


# ------------------------------------------------------------------- state


def _delay():
    return float(os.environ.get("TRAINIUM_REHEARSAL_EKS_ADDON_SECONDS", "2"))


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _addons(cluster):
    """The cluster's add-ons by name (dicts in Addon's shape; ``_next`` holds a pending state change), settled to now."""
    addons = cluster.__dict__.setdefault("_trainium_addons", {})
    now = time.monotonic()
    for name, addon in list(addons.items()):
        pending = addon.get("_next")
        if pending and now >= pending[0]:
            _at, status, health = addon.pop("_next")
            if status is None:
                del addons[name]
            else:
                addon["status"], addon["health"] = status, health
    return addons


def _start(addon, status, then, health=None):
    """Put ``addon`` in ``status`` now and in ``then`` (None: gone) after the rehearsal's delay."""
    addon["status"] = status
    addon["modifiedAt"] = _now()
    addon["_next"] = (time.monotonic() + _delay(), then, health or {"issues": []})


def _public(addon):
    return copy.deepcopy({key: value for key, value in addon.items() if not key.startswith("_")})


def _cluster(response, name):
    cluster = response.eks_backend.clusters.get(name)
    if cluster is None:
        raise _not_found(f"No cluster found for name: {name}.", name)
    return cluster


def _addon(cluster, name):
    addon = _addons(cluster).get(name)
    if addon is None:
        raise _not_found(f"No addon: {name} found in cluster: {cluster.name}", cluster.name, name)
    return addon


def _check_configuration(text, cluster, name):
    if not text:
        return
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            data = None
    if not isinstance(data, dict):
        raise _invalid("ConfigurationValue provided in request is not supported: the configuration values must be a JSON or YAML "
                       "object", cluster, name)


def _check_common(response, cluster, name):
    """What CreateAddon and UpdateAddon check alike; returns (role ARN, configuration values, resolveConflicts) as sent."""
    for unsupported in ("podIdentityAssociations", "namespaceConfig"):
        if response._get_param(unsupported):  # pylint: disable=protected-access
            raise _invalid(f"The rehearsal does not emulate {unsupported}.", cluster.name, name)
    role = response._get_param("serviceAccountRoleArn")  # pylint: disable=protected-access
    if role is not None and not ROLE_ARN_RE.match(role):
        raise _invalid(f"Invalid serviceAccountRoleArn: {role!r} is not the ARN of an IAM role.", cluster.name, name)
    values = response._get_param("configurationValues")  # pylint: disable=protected-access
    _check_configuration(values, cluster.name, name)
    resolve = response._get_param("resolveConflicts")  # pylint: disable=protected-access
    if resolve is not None and resolve not in RESOLVE_CONFLICTS:
        raise _invalid(f"resolveConflicts {resolve!r} is not one of {', '.join(RESOLVE_CONFLICTS)}.", cluster.name, name)
    return role, values, resolve


def _check_version(cluster, name, version):
    offered = versions_for(name, cluster.version)
    if version not in offered:
        raise _invalid("Addon version specified is not supported", cluster.name, name)


def _action_result(body):
    from moto.core.responses import ActionResult  # pylint: disable=import-outside-toplevel

    return ActionResult(body)


def _page(items, max_results, next_token, cluster=None):
    start = int(next_token) if next_token and str(next_token).isdigit() else 0
    size = int(max_results) if max_results else 100
    if not 1 <= size <= 100:
        raise _invalid("maxResults must be from 1 to 100.", cluster)
    return items[start:start + size], (str(start + size) if start + size < len(items) else None)


# -------------------------------------------------------------- operations


def create_addon(self):
    cluster = _cluster(self, self._get_param("name"))
    name = self._get_param("addonName")
    role, values, _resolve = _check_common(self, cluster, name)
    offered = versions_for(name, cluster.version)
    if not offered:
        raise _invalid(f"Addon {name} specified is not supported in {cluster.version} kubernetes version", cluster.name, name)
    version = self._get_param("addonVersion")
    if version:
        _check_version(cluster, name, version)
    else:
        version = next(v for v, default in offered.items() if default)
    if name in _addons(cluster):
        raise _in_use("Addon already exists.", cluster.name, name)
    arn_parts = cluster.arn.split(":")
    tags = dict(self._get_param("tags") or {})
    now = _now()
    addon = {
        "addonName": name,
        "clusterName": cluster.name,
        "addonVersion": version,
        "health": {"issues": []},
        "addonArn": f"arn:{arn_parts[1]}:eks:{arn_parts[3]}:{arn_parts[4]}:addon/{cluster.name}/{name}/{uuid.uuid4()}",
        "createdAt": now,
        "modifiedAt": now,
        "tags": tags,
        "publisher": "eks",
        "owner": "aws",
    }
    if role:
        addon["serviceAccountRoleArn"] = role
    if values:
        addon["configurationValues"] = values
    then, health = "ACTIVE", None
    fault = FAULT_HEALTH.get(tags.get(FAULT_TAG))
    if fault:
        issue = dict(fault[1], message=fault[1]["message"].format(workload="aws-node" if name == "vpc-cni" else name),
                     resourceIds=[])
        then, health = fault[0], {"issues": [issue]}
    _start(addon, "CREATING", then, health)
    _addons(cluster)[name] = addon
    return _action_result({"addon": _public(addon)})


def describe_addon(self):
    cluster = _cluster(self, self._get_param("name"))
    return _action_result({"addon": _public(_addon(cluster, self._get_param("addonName")))})


def list_addons(self):
    cluster = _cluster(self, self._get_param("name"))
    page, token = _page(sorted(_addons(cluster)), self._get_param("maxResults"), self._get_param("nextToken"), cluster.name)
    return _action_result(dict({"addons": page}, **({"nextToken": token} if token else {})))


def update_addon(self):
    cluster = _cluster(self, self._get_param("name"))
    name = self._get_param("addonName")
    addon = _addon(cluster, name)
    role, values, resolve = _check_common(self, cluster, name)
    version = self._get_param("addonVersion")
    if version:
        _check_version(cluster, name, version)
    if addon["status"] in BUSY_STATES:
        raise _in_use(f"Addon {name} is in {addon['status']} state and cannot be updated until it settles.", cluster.name, name)
    params = []
    if version:
        addon["addonVersion"] = version
        params.append({"type": "AddonVersion", "value": version})
    if role is not None:
        addon["serviceAccountRoleArn"] = role
        params.append({"type": "ServiceAccountRoleArn", "value": role})
    if values is not None:
        if values:
            addon["configurationValues"] = values
        else:
            addon.pop("configurationValues", None)
        params.append({"type": "ConfigurationValues", "value": values})
    if resolve:
        params.append({"type": "ResolveConflicts", "value": resolve})
    _start(addon, "UPDATING", "ACTIVE")
    update = {"id": str(uuid.uuid4()), "status": "InProgress", "type": "AddonUpdate", "params": params, "createdAt": _now(), "errors": []}
    return _action_result({"update": update})


def delete_addon(self):
    cluster = _cluster(self, self._get_param("name"))
    addon = _addon(cluster, self._get_param("addonName"))
    if addon["status"] != "DELETING":
        _start(addon, "DELETING", None)
    return _action_result({"addon": _public(addon)})


def describe_addon_versions(self):
    kubernetes_version = self._get_param("kubernetesVersion")
    name = self._get_param("addonName")
    types, publishers, owners = (self._get_param(key) or [] for key in ("types", "publishers", "owners"))
    infos = []
    for candidate in sorted(CATALOGUE):
        if name and candidate != name:
            continue
        info = addon_info(candidate, kubernetes_version)
        if info is None or (types and info["type"] not in types) or (publishers and info["publisher"] not in publishers) \
                or (owners and info["owner"] not in owners):
            continue
        infos.append(info)
    page, token = _page(infos, self._get_param("maxResults"), self._get_param("nextToken"))
    return _action_result(dict({"addons": page}, **({"nextToken": token} if token else {})))


OPERATIONS = (create_addon, describe_addon, list_addons, update_addon, delete_addon, describe_addon_versions)


# -------------------------------------------------------------------- tags


def _addon_by_arn(backend, arn):
    match = ADDON_ARN_RE.match(arn or "")
    cluster = backend.clusters.get(match.group("cluster")) if match else None
    addon = _addons(cluster).get(match.group("addon")) if cluster is not None else None
    return addon if addon is not None and addon["addonArn"] == arn else None


def _tag(addon, tags):
    addon["tags"].update(tags or {})


def _untag(addon, keys):
    for key in keys if isinstance(keys, list) else [keys]:
        addon["tags"].pop(key, None)


def _list_tags(addon):
    return dict(addon["tags"])


def _for_addons(original, action):
    """Backend tagging call ``original`` that also takes add-on ARNs (handled by ``action``)."""

    def call(self, resource_arn, *args, **kwargs):
        addon = _addon_by_arn(self, resource_arn)
        if addon is None:
            return original(self, resource_arn, *args, **kwargs)
        return action(addon, *args, **kwargs)

    return call


def install():
    from moto.eks import urls  # pylint: disable=import-outside-toplevel
    from moto.eks.models import EKSBackend  # pylint: disable=import-outside-toplevel
    from moto.eks.responses import EKSResponse  # pylint: disable=import-outside-toplevel

    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/addons$"] = urls.response.dispatch
    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/addons/(?P<addonName>[^/]+)$"] = urls.response.dispatch
    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/addons/(?P<addonName>[^/]+)/update$"] = urls.response.dispatch
    urls.url_paths["{0}/addons/supported-versions$"] = urls.response.dispatch
    for operation in OPERATIONS:
        setattr(EKSResponse, operation.__name__, operation)
    EKSBackend.tag_resource = _for_addons(EKSBackend.tag_resource, _tag)
    EKSBackend.untag_resource = _for_addons(EKSBackend.untag_resource, _untag)
    EKSBackend.list_tags_for_resource = _for_addons(EKSBackend.list_tags_for_resource, _list_tags)
