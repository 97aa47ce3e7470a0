# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What of one deployment exists in an account: read after a teardown, it must be nothing.

A resource belongs to the deployment when it carries the ownership tag
``trainium.eks/cluster=<cluster>`` (every resource the collection creates
does, ``trainium_deployment.base_tags``); the EKS cluster, the IAM roles (with
the tag), the KMS alias, the log groups and the image repository are found by
the names the collection gives them. Only reads the stages' IAM policies
allow (docs/iam/). What AWS keeps after a deletion for a while is not counted: a NAT
gateway or an instance in state deleted/terminated, a KMS key pending
deletion (KMS waits 7 to 30 days by design).
"""

from __future__ import annotations

from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import all_items, error_code
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import CLUSTER_TAG, resource_names

try:
    from botocore.exceptions import ClientError
except ImportError:  # pragma: no cover - the module reports the missing botocore
    ClientError = Exception

GONE_STATES = {"deleted", "terminated", "shutting-down", "PendingDeletion", "PendingReplicaDeletion"}
# The EC2 kinds the ownership tag finds: (kind, operation, list key, id key, state key or None).
EC2_KINDS = (
    ("vpcs", "describe_vpcs", "Vpcs", "VpcId", None),
    ("subnets", "describe_subnets", "Subnets", "SubnetId", None),
    ("security_groups", "describe_security_groups", "SecurityGroups", "GroupId", None),
    ("internet_gateways", "describe_internet_gateways", "InternetGateways", "InternetGatewayId", None),
    ("nat_gateways", "describe_nat_gateways", "NatGateways", "NatGatewayId", "State"),
    ("route_tables", "describe_route_tables", "RouteTables", "RouteTableId", None),
    ("elastic_ips", "describe_addresses", "Addresses", "AllocationId", None),
    ("launch_templates", "describe_launch_templates", "LaunchTemplates", "LaunchTemplateId", None),
    ("placement_groups", "describe_placement_groups", "PlacementGroups", "GroupName", "State"),
    ("network_interfaces", "describe_network_interfaces", "NetworkInterfaces", "NetworkInterfaceId", None),
)


def _tags(items):
    return {tag.get("Key"): tag.get("Value") for tag in items or []}


def _ec2(client, cluster):
    tag_filter = [{"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]}]
    found = {}
    for kind, operation, key, id_key, state_key in EC2_KINDS:
        items = all_items(client, operation, key, Filters=tag_filter)
        found[kind] = [item[id_key] for item in items if not (state_key and item.get(state_key) in GONE_STATES)]
    # A node group's instances carry EKS's own tag too: found by either.
    instances = set()
    for key in (CLUSTER_TAG, "eks:cluster-name"):
        instances.update(
            instance["InstanceId"]
            for reservation in all_items(client, "describe_instances", "Reservations", Filters=[{"Name": f"tag:{key}", "Values": [cluster]}])
            for instance in reservation.get("Instances") or []
            if (instance.get("State") or {}).get("Name") not in GONE_STATES)
    found["instances"] = sorted(instances)
    return found


def _eks(client, cluster):
    try:
        client.describe_cluster(name=cluster)
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return []
        raise
    return [cluster]


def _fsx(client, cluster):
    systems = [fs["FileSystemId"] for fs in all_items(client, "describe_file_systems", "FileSystems")
               if _tags(fs.get("Tags")).get(CLUSTER_TAG) == cluster]
    backups = [backup["BackupId"] for backup in all_items(client, "describe_backups", "Backups")
               if _tags(backup.get("Tags")).get(CLUSTER_TAG) == cluster and backup.get("Lifecycle") != "DELETED"]
    return systems, backups


def _iam(client, cluster):
    """The deployment's roles, by the names the collection gives them (IAM cannot be searched by tag), and its OIDC
    provider, by its tag; a role of that name without the deployment's tag is another's and not listed."""
    names = resource_names(cluster)
    roles = []
    for name in (names["cluster_role"], names["node_role"], names["vpc_cni_role"], f"{cluster}-fsx-csi"):
        try:
            role = client.get_role(RoleName=name)["Role"]
        except ClientError as exc:
            if error_code(exc) == "NoSuchEntity":
                continue
            raise
        if _tags(role.get("Tags")).get(CLUSTER_TAG) == cluster:
            roles.append(name)
    providers = []
    for provider in client.list_open_id_connect_providers().get("OpenIDConnectProviderList") or []:
        arn = provider["Arn"]
        if _tags(client.get_open_id_connect_provider(OpenIDConnectProviderArn=arn).get("Tags")).get(CLUSTER_TAG) == cluster:
            providers.append(arn)
    return roles, providers


def _kms(client, cluster):
    alias = f"alias/{resource_names(cluster)['kms_alias']}"
    found = []
    for entry in all_items(client, "list_aliases", "Aliases"):
        if entry.get("AliasName") == alias and entry.get("TargetKeyId"):
            state = client.describe_key(KeyId=entry["TargetKeyId"])["KeyMetadata"].get("KeyState")
            if state not in GONE_STATES:
                found.append(alias)
    return found


def _logs(client, cluster):
    return [group["logGroupName"] for group in all_items(client, "describe_log_groups", "logGroups", logGroupNamePrefix=f"/aws/eks/{cluster}/")]


def _ecr(client, repositories):
    """The repositories of those names that exist (ECR cannot be searched by tag, and reading a repository's tags
    would need one more permission than the stages' policies give)."""
    found = []
    for name in repositories:
        try:
            client.describe_repositories(repositoryNames=[name])
        except ClientError as exc:
            if error_code(exc) == "RepositoryNotFoundException":
                continue
            raise
        found.append(name)
    return found


def deployment_resources(client, cluster, repositories=()):
    """By kind, the IDs or names of what of deployment ``cluster`` exists; ``client(service)`` gives a boto3 client.

    ``repositories``: the ECR repositories to look at (the deployment's image repository), listed when they exist.
    """
    found = {"eks_clusters": _eks(client("eks"), cluster)}
    found.update(_ec2(client("ec2"), cluster))
    found["fsx_file_systems"], found["fsx_backups"] = _fsx(client("fsx"), cluster)
    found["iam_roles"], found["oidc_providers"] = _iam(client("iam"), cluster)
    found["kms_aliases"] = _kms(client("kms"), cluster)
    found["log_groups"] = _logs(client("logs"), cluster)
    found["ecr_repositories"] = _ecr(client("ecr"), repositories)
    return {kind: sorted(ids) for kind, ids in sorted(found.items())}
