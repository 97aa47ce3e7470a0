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
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import uuid

from moto_ext_ec2 import ec2_backend


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
    for method in ("schedule_key_deletion", "cancel_key_deletion", "enable_key", "disable_key"):
        setattr(KmsBackend, method, _kms_by_key_id(getattr(KmsBackend, method)))
