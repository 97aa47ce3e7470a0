# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS additions to moto server for the trainium.eks rehearsal (see moto_ext.py).

1. Cluster endpoint. moto invents an endpoint and a random "CA". When
   TRAINIUM_REHEARSAL_KUBE_ENDPOINT is set and the PEM file named by
   TRAINIUM_REHEARSAL_KUBE_CA_FILE exists, CreateCluster and DescribeCluster
   answer with the rehearsal's kube-apiserver URL and its CA (base64 PEM, as
   EKS does), so the collection reaches Kubernetes the way it does on AWS.
2. Cluster security group. AWS creates one security group per cluster
   (`eks-cluster-sg-<name>-<n>`, tagged `aws:eks:cluster-name` and
   `kubernetes.io/cluster/<name>: owned`) in the VPC of its subnets, reports it
   as `resourcesVpcConfig.clusterSecurityGroupId` with the `vpcId`, and deletes
   it with the cluster. moto creates none; this adds it on CreateCluster and
   removes it on DeleteCluster (left in place while another group's rule still
   references it, where AWS would fail the same way). moto's
   UpdateClusterConfig also replaces the whole resourcesVpcConfig with the
   request's (dropping subnets and this group); AWS merges, and so does this.
3. Secrets encryption of an existing cluster. moto has no
   AssociateEncryptionConfig or DescribeUpdate (404), so a cluster made
   without envelope encryption could not get it. As the EKS API reference
   says, AssociateEncryptionConfig (POST
   /clusters/<name>/encryption-config/associate) adds the encryptionConfig
   (refused with InvalidRequestException when the cluster has one already)
   and answers an update of type AssociateEncryptionConfig; DescribeUpdate
   (GET /clusters/<name>/updates/<id>) answers it. AWS takes minutes with
   the update InProgress; here it is Successful at once.
4. The secrets encryption key's teardown. moto's ScheduleKeyDeletion,
   CancelKeyDeletion, EnableKey and DisableKey look the key up by the KeyId
   as given and fail (HTTP 500, KeyError) on a key ARN, which KMS accepts and
   amazon.aws.kms_key sends; here the ARN is turned into the key ID first.
   (KMS, not EKS, but the EKS secrets key is the only KMS key the collection
   makes.)
5. Access configuration and access entries. moto ignores CreateCluster's
   accessConfig and answers 404 to every access entry operation. As the EKS
   API reference documents: CreateCluster keeps accessConfig
   (authenticationMode, CONFIG_MAP when not given;
   bootstrapClusterCreatorAdminPermissions, true when not given, and
   InvalidParameterException when false with CONFIG_MAP) and DescribeCluster
   reports it; with bootstrapping on and a mode with API, the caller (the IAM
   principal of the request's access key, as moto's STS GetCallerIdentity
   names it; an assumed role's session stands for its role) gets a STANDARD
   access entry with AmazonEKSClusterAdminPolicy at cluster scope.
   UpdateClusterConfig with accessConfig changes the mode forward only
   (CONFIG_MAP -> API_AND_CONFIG_MAP -> API; InvalidParameterException for a
   step back, the same mode, or another change in the same call) and answers
   an AccessConfigUpdate (Successful at once, as DescribeUpdate says).
   CreateAccessEntry, DescribeAccessEntry, ListAccessEntries (with
   associatedPolicyArn and pagination), DeleteAccessEntry,
   AssociateAccessPolicy, DisassociateAccessPolicy and
   ListAssociatedAccessPolicies keep entries per cluster, with the errors AWS
   documents: ResourceNotFoundException for an unknown cluster, entry or
   association; InvalidRequestException while the cluster's mode is
   CONFIG_MAP; ResourceInUseException for a second entry of a principal;
   InvalidParameterException for a principal that is not an IAM role or user
   ARN (an STS session included), a node type with a user, a Kubernetes group
   or username in a reserved prefix, a policy that is not an EKS access
   policy, a scope that is not cluster or namespace (with namespaces), and
   policies on an entry that is not STANDARD. Entries go with their cluster.
   The rehearsal's token authenticator reads them (eks_authenticator.py).
6. Upgrade policy. moto ignores CreateCluster's upgradePolicy; here it is
   kept and DescribeCluster reports it (only when given: the API reference
   does not say what EKS reports otherwise), UpdateClusterConfig with
   upgradePolicy alone changes it (an UpgradePolicyUpdate, Successful at
   once), and a supportType other than STANDARD or EXTENDED is refused with
   InvalidParameterException; STANDARD for a cluster whose version is in
   extended support with InvalidRequestException (moto_ext_eks_versions.py).
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import re
import uuid

from eks_authenticator import iam_principal
from moto_ext_ec2 import ec2_backend
from moto_ext_eks_versions import standard_policy_problem


def _local_apiserver(cluster):
    endpoint = os.environ.get("TRAINIUM_REHEARSAL_KUBE_ENDPOINT")
    ca_file = os.environ.get("TRAINIUM_REHEARSAL_KUBE_CA_FILE")
    if endpoint and ca_file and os.path.isfile(ca_file):
        with open(ca_file, "rb") as pem:
            cluster.certificate_authority = {"data": base64.b64encode(pem.read()).decode("ascii")}
        cluster.endpoint = endpoint
    return cluster


def _eks_cluster_call(original):
    def call(self, *args, **kwargs):
        return _local_apiserver(original(self, *args, **kwargs))

    return call


def _eks_create_with_security_group(original):
    def create(self, *args, **kwargs):
        cluster = original(self, *args, **kwargs)
        config = cluster.resources_vpc_config if isinstance(cluster.resources_vpc_config, dict) else {}
        subnets = config.get("subnetIds") or []
        if not subnets or config.get("clusterSecurityGroupId"):
            return cluster
        ec2 = ec2_backend(self)
        try:
            vpc_id = ec2.get_subnet(subnets[0]).vpc_id
        except Exception:  # pylint: disable=broad-except
            return cluster
        name = f"eks-cluster-sg-{cluster.name}-{abs(hash(cluster.arn)) % 10**10}"
        group = ec2.create_security_group(
            name=name,
            description="EKS created security group applied to ENI that is attached to EKS Control Plane master nodes, "
                        "as well as any managed workloads.",
            vpc_id=vpc_id,
            tags={"Name": name, "aws:eks:cluster-name": cluster.name, f"kubernetes.io/cluster/{cluster.name}": "owned"},
        )
        config["clusterSecurityGroupId"] = group.id
        config["vpcId"] = vpc_id
        cluster.resources_vpc_config = config
        return cluster

    return create


def _eks_delete_with_security_group(original):
    def delete(self, name, *args, **kwargs):
        cluster = self.clusters.get(name)
        config = getattr(cluster, "resources_vpc_config", None) or {}
        group_id = config.get("clusterSecurityGroupId") if isinstance(config, dict) else None
        result = original(self, name, *args, **kwargs)
        if group_id:
            try:
                ec2_backend(self).delete_security_group(group_id=group_id)
            except Exception:  # pylint: disable=broad-except
                pass  # still referenced, or already gone
        return result

    return delete


def _eks_update_merges_vpc_config(original):
    def update(self, name, resources_vpc_config, *args, **kwargs):
        cluster = self.clusters.get(name)
        before = dict(getattr(cluster, "resources_vpc_config", None) or {}) if cluster else {}
        result = original(self, name, resources_vpc_config, *args, **kwargs)
        if cluster and resources_vpc_config:
            cluster.resources_vpc_config = {**before, **resources_vpc_config}
        return result

    return update


def associate_encryption_config(self):
    from moto.eks.exceptions import InvalidRequestException, ResourceNotFoundException  # pylint: disable=import-outside-toplevel

    name = self._get_param("name")
    cluster = self.eks_backend.clusters.get(name)
    if cluster is None:
        raise ResourceNotFoundException(clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=None,
                                        message=f"No cluster found for name: {name}.")
    config = self._get_param("encryptionConfig") or []
    if cluster.encryption_config:
        raise InvalidRequestException(message="Encryption is already enabled on the cluster")
    cluster.encryption_config = config
    update = {
        "id": str(uuid.uuid4()),
        "status": "Successful",
        "type": "AssociateEncryptionConfig",
        "params": [{"type": "EncryptionConfig", "value": json.dumps(config)}],
        "createdAt": datetime.datetime.now(datetime.timezone.utc).timestamp(),
        "errors": [],
    }
    self.eks_backend.__dict__.setdefault("_trainium_updates", {})[(name, update["id"])] = update
    return 200, {}, json.dumps({"update": update})


def describe_update(self):
    from moto.eks.exceptions import ResourceNotFoundException  # pylint: disable=import-outside-toplevel

    name = self._get_param("name")
    update_id = self._get_param("updateId") or self.path.rstrip("/").rsplit("/", 1)[-1]
    update = self.eks_backend.__dict__.get("_trainium_updates", {}).get((name, update_id))
    if update is None:
        raise ResourceNotFoundException(clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=None,
                                        message=f"No update found for ID: {update_id}")
    return 200, {}, json.dumps({"update": update})


# --------------------------------------------------------------- access entries

AUTHENTICATION_MODES = ("CONFIG_MAP", "API_AND_CONFIG_MAP", "API")
ENTRY_TYPES = ("STANDARD", "EC2", "EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "HYBRID_LINUX")
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
PRINCIPAL_RE = re.compile(r"^arn:(aws[a-z-]*):iam::([0-9]{12}):(role|user)/(?:[\w+=,.@-]+/)*([\w+=,.@-]{1,64})$")
POLICY_RE = re.compile(r"^arn:aws[a-z-]*:eks::aws:cluster-access-policy/[A-Za-z0-9]+$")
RESERVED_PREFIXES = ("system:", "eks:", "aws:", "amazon:", "iam:")
MODE_REQUIRED = "The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] to perform this operation."


# upgradePolicy.supportType (Amazon EKS API Reference, UpgradePolicyRequest).
UPGRADE_SUPPORT_TYPES = ("STANDARD", "EXTENDED")


def _errors():
    from moto.eks import exceptions  # pylint: disable=import-outside-toplevel

    return exceptions


def _not_found(message, cluster=None):
    return _errors().ResourceNotFoundException(clusterName=cluster, nodegroupName=None, fargateProfileName=None, addonName=None,
                                               message=message)


def _invalid(message, cluster=None):
    return _errors().InvalidParameterException(clusterName=cluster, nodegroupName=None, fargateProfileName=None, addonName=None,
                                               message=message)


def _invalid_request(message, cluster=None):
    return _errors().InvalidRequestException(message=message)


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _cluster(response, name):
    cluster = response.eks_backend.clusters.get(name)
    if cluster is None:
        raise _not_found(f"No cluster found for name: {name}.", name)
    return cluster


def _entries(cluster):
    """The cluster's access entries by principal ARN (each a dict in AccessEntry's shape, policies under _policies)."""
    return cluster.__dict__.setdefault("_trainium_access_entries", {})


def _mode(cluster):
    return (getattr(cluster, "access_config", None) or {}).get("authenticationMode", "CONFIG_MAP")


def _entries_allowed(cluster):
    """The entries of a cluster whose mode has API; InvalidRequestException in CONFIG_MAP."""
    if _mode(cluster) == "CONFIG_MAP":
        raise _invalid_request(MODE_REQUIRED, cluster.name)
    return _entries(cluster)


def _entry(cluster, principal):
    entry = _entries_allowed(cluster).get(principal)
    if entry is None:
        raise _not_found(f"The specified principalArn could not be found. You can view your available access entries with "
                         f"'aws eks list-access-entries --cluster-name {cluster.name}'.", cluster.name)
    return entry


def _public(entry):
    return {key: value for key, value in entry.items() if not key.startswith("_")}


def _new_entry(cluster, principal, entry_type="STANDARD", groups=None, username=None, tags=None):
    """A new access entry (validated as CreateAccessEntry does); not stored yet."""
    match = PRINCIPAL_RE.match(principal or "")
    if not match:
        raise _invalid(f"The specified principalArn is invalid: {principal!r} is not the ARN of an IAM role or user "
                       "(an STS assumed-role session cannot have an access entry).", cluster.name)
    partition, account, kind, name = match.groups()
    if entry_type not in ENTRY_TYPES:
        raise _invalid(f"The type {entry_type!r} is not one of {', '.join(ENTRY_TYPES)}.", cluster.name)
    if entry_type != "STANDARD" and (kind != "role" or groups or username):
        raise _invalid(f"An access entry of type {entry_type} takes an IAM role and no Kubernetes groups or username.", cluster.name)
    for value in list(groups or []) + ([username] if username else []):
        if value.startswith(RESERVED_PREFIXES):
            raise _invalid(f"{value!r} starts with a prefix EKS reserves ({', '.join(RESERVED_PREFIXES)}).", cluster.name)
    if principal in _entries_allowed(cluster):
        raise _errors().ResourceInUseException(clusterName=cluster.name, nodegroupName=None, addonName=None,
                                               message="The specified access entry resource is already in use on this cluster.")
    if not username:
        if entry_type != "STANDARD":
            username = "system:node:{{EC2PrivateDNSName}}"
        elif kind == "role":
            username = f"arn:{partition}:sts::{account}:assumed-role/{name}/{{{{SessionName}}}}"
        else:
            username = principal
    arn_parts = cluster.arn.split(":")
    now = _now()
    return {
        "clusterName": cluster.name,
        "principalArn": principal,
        "kubernetesGroups": list(groups or []) + (["system:nodes"] if entry_type != "STANDARD" else []),
        "accessEntryArn": f"arn:{arn_parts[1]}:eks:{arn_parts[3]}:{arn_parts[4]}:access-entry/{cluster.name}/{kind}/{account}/{name}/"
                          f"{uuid.uuid4()}",
        "createdAt": now,
        "modifiedAt": now,
        "tags": dict(tags or {}),
        "username": username,
        "type": entry_type,
        "_policies": {},
    }


def _associate(cluster, entry, policy, scope):
    if entry["type"] != "STANDARD":
        raise _invalid('This operation can only be performed on Access Entries with a type of "STANDARD".', cluster.name)
    if not POLICY_RE.match(policy or ""):
        raise _invalid(f"The specified policyArn is invalid: {policy!r} is not an EKS access policy "
                       "(arn:aws:eks::aws:cluster-access-policy/...).", cluster.name)
    scope = dict(scope or {})
    namespaces = list(scope.get("namespaces") or [])
    if scope.get("type") not in ("cluster", "namespace") or (scope["type"] == "namespace") != bool(namespaces):
        raise _invalid("accessScope: type cluster without namespaces, or type namespace with at least one namespace.", cluster.name)
    now = _now()
    association = entry["_policies"].get(policy)
    if association is None:
        association = {"policyArn": policy, "associatedAt": now}
        entry["_policies"][policy] = association
    association.update(accessScope={"type": scope["type"], "namespaces": namespaces}, modifiedAt=now)
    entry["modifiedAt"] = now
    return association


def caller_principal(response):
    """The IAM principal of a request's access key, as moto's STS answers GetCallerIdentity for it."""
    from moto.sts.models import sts_backends  # pylint: disable=import-outside-toplevel
    from moto.utilities.utils import get_partition  # pylint: disable=import-outside-toplevel

    partition = get_partition(response.region)
    sts = sts_backends[response.current_account][partition]
    _user_id, arn, _account = sts.get_caller_identity(response.get_access_key(), response.region)
    return iam_principal(arn)


def _eks_create_with_access_config(original):
    def create(self):
        access = self._get_param("accessConfig") or {}
        mode = access.get("authenticationMode") or "CONFIG_MAP"
        bootstrap = access.get("bootstrapClusterCreatorAdminPermissions")
        bootstrap = True if bootstrap is None else bootstrap
        if mode not in AUTHENTICATION_MODES:
            raise _invalid(f"authenticationMode {mode!r} is not one of {', '.join(AUTHENTICATION_MODES)}.")
        if mode == "CONFIG_MAP" and not bootstrap:
            raise _invalid("bootstrapClusterCreatorAdminPermissions must be true if cluster authentication mode is set to CONFIG_MAP")
        policy = (self._get_param("upgradePolicy") or {}).get("supportType")
        if policy is not None and policy not in UPGRADE_SUPPORT_TYPES:
            raise _invalid(f"supportType {policy!r} is not one of {', '.join(UPGRADE_SUPPORT_TYPES)}.")
        result = original(self)
        cluster = self.eks_backend.clusters[self._get_param("name")]
        cluster.access_config = {"authenticationMode": mode, "bootstrapClusterCreatorAdminPermissions": bootstrap}
        if policy:
            cluster.upgrade_policy = {"supportType": policy}
        if bootstrap and mode != "CONFIG_MAP":
            entry = _new_entry(cluster, caller_principal(self))
            _associate(cluster, entry, f"arn:{cluster.arn.split(':')[1]}:eks::aws:cluster-access-policy/{ADMIN_POLICY}", {"type": "cluster"})
            _entries(cluster)[entry["principalArn"]] = entry
        return result

    return create


def _record_update(response, name, update):
    response.eks_backend.__dict__.setdefault("_trainium_updates", {})[(name, update["id"])] = update
    return update


def _eks_update_access_config(original):
    def update(self):
        access = self._get_param("accessConfig")
        policy = self._get_param("upgradePolicy")
        if policy and not access:
            return _update_upgrade_policy(self, policy)
        if not access:
            return original(self)
        name = self._get_param("name")
        cluster = _cluster(self, name)
        others = [key for key in ("resourcesVpcConfig", "logging", "upgradePolicy", "kubernetesNetworkConfig", "remoteNetworkConfig",
                                  "zonalShiftConfig", "computeConfig", "storageConfig") if self._get_param(key)]
        if others:
            raise _invalid(f"Only one type of update can be allowed; got accessConfig and {', '.join(others)}.", name)
        wanted = access.get("authenticationMode")
        current = _mode(cluster)
        if wanted not in AUTHENTICATION_MODES:
            raise _invalid(f"authenticationMode {wanted!r} is not one of {', '.join(AUTHENTICATION_MODES)}.", name)
        if AUTHENTICATION_MODES.index(wanted) <= AUTHENTICATION_MODES.index(current):
            raise _invalid(f"Unsupported authentication mode update from {current} to {wanted}.", name)
        cluster.access_config = dict(getattr(cluster, "access_config", None) or {}, authenticationMode=wanted)
        answer = _record_update(self, name, {
            "id": str(uuid.uuid4()),
            "status": "Successful",
            "type": "AccessConfigUpdate",
            "params": [{"type": "AuthenticationMode", "value": wanted}],
            "createdAt": _now().timestamp(),
            "errors": [],
        })
        return 200, {}, json.dumps({"update": answer})

    return update


def _update_upgrade_policy(response, policy):
    """UpdateClusterConfig with upgradePolicy alone: kept and reported, an UpgradePolicyUpdate Successful at once."""
    name = response._get_param("name")  # pylint: disable=protected-access
    cluster = _cluster(response, name)
    others = [key for key in ("resourcesVpcConfig", "logging", "kubernetesNetworkConfig") if response._get_param(key)]  # pylint: disable=protected-access
    if others:
        raise _invalid(f"Only one type of update can be allowed; got upgradePolicy and {', '.join(others)}.", name)
    wanted = policy.get("supportType")
    if wanted not in UPGRADE_SUPPORT_TYPES:
        raise _invalid(f"supportType {wanted!r} is not one of {', '.join(UPGRADE_SUPPORT_TYPES)}.", name)
    problem = standard_policy_problem(cluster) if wanted == "STANDARD" else None
    if problem:
        raise _invalid_request(problem, name)
    cluster.upgrade_policy = {"supportType": wanted}
    answer = _record_update(response, name, {
        "id": str(uuid.uuid4()), "status": "Successful", "type": "UpgradePolicyUpdate",
        "params": [{"type": "UpgradePolicy", "value": wanted}], "createdAt": _now().timestamp(), "errors": [],
    })
    return 200, {}, json.dumps({"update": answer})


def _action_result(body):
    from moto.core.responses import ActionResult  # pylint: disable=import-outside-toplevel

    return ActionResult(body)


def create_access_entry(self):
    cluster = _cluster(self, self._get_param("name"))
    entry = _new_entry(cluster, self._get_param("principalArn"), self._get_param("type") or "STANDARD",
                       self._get_param("kubernetesGroups"), self._get_param("username"), self._get_param("tags"))
    _entries(cluster)[entry["principalArn"]] = entry
    return _action_result({"accessEntry": _public(entry)})


def describe_access_entry(self):
    cluster = _cluster(self, self._get_param("name"))
    return _action_result({"accessEntry": _public(_entry(cluster, self._get_param("principalArn")))})


def _page(items, max_results, next_token):
    start = int(next_token) if next_token and str(next_token).isdigit() else 0
    size = int(max_results) if max_results else 100
    if not 1 <= size <= 100:
        raise _invalid("maxResults must be from 1 to 100.")
    page = items[start:start + size]
    return page, (str(start + size) if start + size < len(items) else None)


def list_access_entries(self):
    cluster = _cluster(self, self._get_param("name"))
    policy = self._get_param("associatedPolicyArn")
    principals = [arn for arn, entry in _entries_allowed(cluster).items() if not policy or policy in entry["_policies"]]
    page, token = _page(principals, self._get_param("maxResults"), self._get_param("nextToken"))
    return _action_result(dict({"accessEntries": page}, **({"nextToken": token} if token else {})))


def delete_access_entry(self):
    cluster = _cluster(self, self._get_param("name"))
    entry = _entry(cluster, self._get_param("principalArn"))
    del _entries(cluster)[entry["principalArn"]]
    return _action_result({})


def associate_access_policy(self):
    cluster = _cluster(self, self._get_param("name"))
    entry = _entry(cluster, self._get_param("principalArn"))
    association = _associate(cluster, entry, self._get_param("policyArn"), self._get_param("accessScope"))
    return _action_result({"clusterName": cluster.name, "principalArn": entry["principalArn"], "associatedAccessPolicy": dict(association)})


def disassociate_access_policy(self):
    cluster = _cluster(self, self._get_param("name"))
    entry = _entry(cluster, self._get_param("principalArn"))
    policy = self._get_param("policyArn")
    if entry["_policies"].pop(policy, None) is None:
        raise _not_found(f"The access policy {policy} is not associated with {entry['principalArn']}.", cluster.name)
    return _action_result({})


def list_associated_access_policies(self):
    cluster = _cluster(self, self._get_param("name"))
    entry = _entry(cluster, self._get_param("principalArn"))
    page, token = _page([dict(a) for a in entry["_policies"].values()], self._get_param("maxResults"), self._get_param("nextToken"))
    body = {"clusterName": cluster.name, "principalArn": entry["principalArn"], "associatedAccessPolicies": page}
    return _action_result(dict(body, **({"nextToken": token} if token else {})))


ACCESS_ENTRY_OPERATIONS = (create_access_entry, describe_access_entry, list_access_entries, delete_access_entry,
                           associate_access_policy, disassociate_access_policy, list_associated_access_policies)


def _kms_by_key_id(original):
    def call(self, key_id, *args, **kwargs):
        return original(self, self.get_key_id(key_id), *args, **kwargs)

    return call


def install():
    from moto.eks import urls  # pylint: disable=import-outside-toplevel
    from moto.eks.models import EKSBackend  # pylint: disable=import-outside-toplevel
    from moto.eks.responses import EKSResponse  # pylint: disable=import-outside-toplevel
    from moto.kms.models import KmsBackend  # pylint: disable=import-outside-toplevel

    EKSBackend.create_cluster = _eks_cluster_call(_eks_create_with_security_group(EKSBackend.create_cluster))
    EKSBackend.delete_cluster = _eks_delete_with_security_group(EKSBackend.delete_cluster)
    EKSBackend.update_cluster_config = _eks_update_merges_vpc_config(EKSBackend.update_cluster_config)
    EKSBackend.describe_cluster = _eks_cluster_call(EKSBackend.describe_cluster)
    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/encryption-config/associate$"] = urls.response.dispatch
    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/updates/(?P<updateId>[^/]+)$"] = urls.response.dispatch
    EKSResponse.associate_encryption_config = associate_encryption_config
    EKSResponse.describe_update = describe_update
    # Principal and policy ARNs hold slashes: the router matches the encoded path, these only route to EKS.
    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/access-entries$"] = urls.response.dispatch
    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/access-entries/(?P<rest>.+)$"] = urls.response.dispatch
    EKSResponse.create_cluster = _eks_create_with_access_config(EKSResponse.create_cluster)
    EKSResponse.update_cluster_config = _eks_update_access_config(EKSResponse.update_cluster_config)
    for operation in ACCESS_ENTRY_OPERATIONS:
        setattr(EKSResponse, operation.__name__, operation)
    for method in ("schedule_key_deletion", "cancel_key_deletion", "enable_key", "disable_key"):
        setattr(KmsBackend, method, _kms_by_key_id(getattr(KmsBackend, method)))
