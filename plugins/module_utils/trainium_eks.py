# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""EKS cluster and IAM OIDC provider logic behind trainium.eks.eks_cluster.

Two halves:

- pure decision functions (no AWS): what a create request looks like, which
  differences between the cluster and the request need which update call,
  which differences cannot be changed, whether a version step is allowed;
- boto3 calls, each retried with jittered backoff and turned into
  ``EksClusterError`` (an ``AnsibleAWSError``) on failure.

Only what the caller asked for is compared (an option left unset is never a
difference), and only what the cluster reports (an attribute the API does not
return is not treated as a difference either).
"""

from __future__ import annotations

import re
import time

try:
    import botocore
except ImportError:
    pass  # handled by AnsibleAWSModule

from ansible_collections.amazon.aws.plugins.module_utils.botocore import is_boto3_error_code
from ansible_collections.amazon.aws.plugins.module_utils.errors import AWSErrorHandler
from ansible_collections.amazon.aws.plugins.module_utils.exceptions import AnsibleAWSError
from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry
from ansible_collections.amazon.aws.plugins.module_utils.tagging import compare_aws_tags

LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
AUTHENTICATION_MODES = ("CONFIG_MAP", "API_AND_CONFIG_MAP", "API")
OIDC_CLIENT_ID = "sts.amazonaws.com"
# Tag on the IAM OIDC provider naming its cluster, so that it can be found
# and deleted after the cluster itself is gone.
OIDC_CLUSTER_TAG = "trainium.eks/cluster"
VERSION_PATTERN = re.compile(r"^(\d+)\.(\d+)$")
# Cluster states in which EKS refuses DeleteCluster (ResourceInUseException).
BUSY_STATES = ("CREATING", "UPDATING")
# CreateCluster right after the IAM role was created: the role has not reached EKS yet.
ROLE_NOT_ASSUMABLE = re.compile(r"(cannot|could not|can't|unable to) be assumed", re.IGNORECASE)
ROLE_PROPAGATION_ATTEMPTS = 6


class EksClusterError(AnsibleAWSError):
    pass


class EksConfigError(ValueError):
    """A request the module refuses before calling AWS; the message names the values."""


class EksErrorHandler(AWSErrorHandler):
    _CUSTOM_EXCEPTION = EksClusterError

    @classmethod
    def _is_missing(cls):
        return is_boto3_error_code(["ResourceNotFoundException", "NoSuchEntity"])


# ---------------------------------------------------------------------------
# Pure decision logic
# ---------------------------------------------------------------------------


def parse_version(version, option="version"):
    match = VERSION_PATTERN.match(str(version or ""))
    if not match:
        raise EksConfigError(f"{option}: got {version!r}; allowed: a Kubernetes minor version such as '1.34'")
    return int(match.group(1)), int(match.group(2))


def version_step(current, desired):
    """The version to upgrade to, None when nothing to do; EksConfigError when not allowed."""
    if desired is None or current is None or str(current) == str(desired):
        return None
    have, want = parse_version(current, "cluster version"), parse_version(desired)
    if want < have:
        raise EksConfigError(
            f"version: got {desired}, the cluster runs {current}; allowed: {current} or {have[0]}.{have[1] + 1} (EKS cannot downgrade)"
        )
    if want[0] != have[0] or want[1] != have[1] + 1:
        raise EksConfigError(
            f"version: got {desired}, the cluster runs {current}; allowed: {current} or {have[0]}.{have[1] + 1} "
            "(EKS upgrades one minor version at a time)"
        )
    return str(desired)


def enabled_log_types(logging):
    """Sorted control plane log types a DescribeCluster logging block enables."""
    enabled = set()
    for entry in (logging or {}).get("clusterLogging", []):
        if entry.get("enabled"):
            enabled.update(entry.get("types", []))
    return sorted(enabled)


def logging_request(types):
    """The logging block that enables exactly `types` and disables the others."""
    wanted = [t for t in LOG_TYPES if t in types]
    others = [t for t in LOG_TYPES if t not in types]
    entries = []
    if wanted:
        entries.append({"types": wanted, "enabled": True})
    if others:
        entries.append({"types": others, "enabled": False})
    return {"clusterLogging": entries}


def validate_request(params):
    """Refuse bad input early; returns nothing, raises EksConfigError naming the option."""
    if params.get("version") is not None:
        parse_version(params["version"])
    unknown = [t for t in params.get("logging") or [] if t not in LOG_TYPES]
    if unknown:
        raise EksConfigError(f"logging: got {unknown}; allowed: any of {list(LOG_TYPES)}")
    if params.get("subnets") is not None and len(set(params["subnets"])) < 2:
        raise EksConfigError(
            f"subnets: got {params['subnets']}; allowed: two or more subnet IDs in at least two availability zones"
        )
    key = params.get("secrets_encryption_kms_key_arn")
    if key and not key.startswith("arn:"):
        raise EksConfigError(f"secrets_encryption_kms_key_arn: got {key!r}; allowed: the ARN of a KMS key (arn:...:kms:...:key/...)")


def create_request(params):
    """CreateCluster parameters for the module's options."""
    vpc = {"subnetIds": list(params["subnets"])}
    if params.get("security_groups"):
        vpc["securityGroupIds"] = list(params["security_groups"])
    for option, key in (("endpoint_public_access", "endpointPublicAccess"), ("endpoint_private_access", "endpointPrivateAccess")):
        if params.get(option) is not None:
            vpc[key] = params[option]
    if params.get("public_access_cidrs"):
        vpc["publicAccessCidrs"] = list(params["public_access_cidrs"])
    request = {"name": params["name"], "roleArn": params["role_arn"], "resourcesVpcConfig": vpc}
    if params.get("version"):
        request["version"] = str(params["version"])
    if params.get("service_ipv4_cidr"):
        request["kubernetesNetworkConfig"] = {"serviceIpv4Cidr": params["service_ipv4_cidr"]}
    if params.get("logging") is not None:
        request["logging"] = logging_request(params["logging"])
    if params.get("secrets_encryption_kms_key_arn"):
        request["encryptionConfig"] = [{"resources": ["secrets"], "provider": {"keyArn": params["secrets_encryption_kms_key_arn"]}}]
    access = {}
    if params.get("authentication_mode"):
        access["authenticationMode"] = params["authentication_mode"]
    if params.get("bootstrap_cluster_creator_admin") is not None:
        access["bootstrapClusterCreatorAdminPermissions"] = params["bootstrap_cluster_creator_admin"]
    if access:
        request["accessConfig"] = access
    if params.get("tags"):
        request["tags"] = dict(params["tags"])
    return request


def encryption_key(cluster):
    for entry in cluster.get("encryptionConfig") or []:
        if "secrets" in entry.get("resources", []):
            return entry.get("provider", {}).get("keyArn")
    return None


def immutable_differences(cluster, params):
    """Asked-for values that differ from the cluster and that EKS cannot change in place."""
    differences = []
    vpc = cluster.get("resourcesVpcConfig") or {}
    if params.get("role_arn") and cluster.get("roleArn") and params["role_arn"] != cluster["roleArn"]:
        differences.append(f"role_arn: cluster has {cluster['roleArn']}, asked {params['role_arn']}")
    if params.get("subnets") is not None and vpc.get("subnetIds") and set(params["subnets"]) != set(vpc["subnetIds"]):
        differences.append(f"subnets: cluster has {sorted(vpc['subnetIds'])}, asked {sorted(params['subnets'])}")
    if params.get("security_groups") is not None and "securityGroupIds" in vpc and set(params["security_groups"]) != set(vpc["securityGroupIds"]):
        differences.append(f"security_groups: cluster has {sorted(vpc['securityGroupIds'])}, asked {sorted(params['security_groups'])}")
    current_cidr = (cluster.get("kubernetesNetworkConfig") or {}).get("serviceIpv4Cidr")
    if params.get("service_ipv4_cidr") and current_cidr and params["service_ipv4_cidr"] != current_cidr:
        differences.append(f"service_ipv4_cidr: cluster has {current_cidr}, asked {params['service_ipv4_cidr']}")
    current_key = encryption_key(cluster)
    wanted_key = params.get("secrets_encryption_kms_key_arn")
    if wanted_key is not None and current_key and wanted_key != current_key:
        if wanted_key:
            differences.append(f"secrets_encryption_kms_key_arn: cluster encrypts secrets with {current_key}, asked {wanted_key}")
        else:
            differences.append(f"secrets_encryption_kms_key_arn: cluster encrypts secrets with {current_key}; EKS cannot remove secrets encryption")
    current_mode = (cluster.get("accessConfig") or {}).get("authenticationMode")
    wanted_mode = params.get("authentication_mode")
    if wanted_mode and current_mode and AUTHENTICATION_MODES.index(wanted_mode) < AUTHENTICATION_MODES.index(current_mode):
        differences.append(
            f"authentication_mode: cluster has {current_mode}, asked {wanted_mode}; EKS only goes CONFIG_MAP -> API_AND_CONFIG_MAP -> API"
        )
    return differences


def endpoint_update(cluster, params):
    """resourcesVpcConfig for UpdateClusterConfig, or None when endpoint access matches."""
    vpc = cluster.get("resourcesVpcConfig") or {}
    update = {}
    for option, key in (("endpoint_public_access", "endpointPublicAccess"), ("endpoint_private_access", "endpointPrivateAccess")):
        if params.get(option) is not None and key in vpc and bool(vpc[key]) != params[option]:
            update[key] = params[option]
    cidrs = params.get("public_access_cidrs")
    if cidrs is not None and "publicAccessCidrs" in vpc and set(cidrs) != set(vpc["publicAccessCidrs"]):
        update["publicAccessCidrs"] = list(cidrs)
    if not update:
        return None
    # Send the whole access picture so that EKS does not reset an unchanged half.
    for option, key in (("endpoint_public_access", "endpointPublicAccess"), ("endpoint_private_access", "endpointPrivateAccess")):
        if key not in update and params.get(option) is not None:
            update[key] = params[option]
    return update


def plan_update(cluster, params, purge_tags=True):
    """What to change on an existing cluster.

    Returns a dict: ``version`` (str or None), ``config`` (a list of
    UpdateClusterConfig payloads, one kind of change each, as EKS requires),
    ``encryption`` (key ARN to associate or None), ``tags_to_set`` (dict),
    ``tags_to_remove`` (list). Raises EksConfigError listing every difference
    that cannot be applied.
    """
    errors = immutable_differences(cluster, params)
    version = None
    try:
        version = version_step(cluster.get("version"), params.get("version"))
    except EksConfigError as e:
        errors.append(str(e))
    if errors:
        raise EksConfigError(f"cannot change {len(errors)} setting(s) of EKS cluster {cluster.get('name')}: " + "; ".join(errors))

    config = []
    if params.get("logging") is not None and "logging" in cluster and enabled_log_types(cluster["logging"]) != sorted(set(params["logging"])):
        config.append({"logging": logging_request(params["logging"])})
    vpc_update = endpoint_update(cluster, params)
    if vpc_update:
        config.append({"resourcesVpcConfig": vpc_update})
    current_mode = (cluster.get("accessConfig") or {}).get("authenticationMode")
    if params.get("authentication_mode") and current_mode and params["authentication_mode"] != current_mode:
        config.append({"accessConfig": {"authenticationMode": params["authentication_mode"]}})

    encryption = None
    if params.get("secrets_encryption_kms_key_arn") and not encryption_key(cluster):
        encryption = params["secrets_encryption_kms_key_arn"]

    tags_to_set, tags_to_remove = {}, []
    if params.get("tags") is not None:
        tags_to_set, tags_to_remove = compare_aws_tags(cluster.get("tags") or {}, params["tags"], purge_tags)
    return {
        "version": version,
        "config": config,
        "encryption": encryption,
        "tags_to_set": tags_to_set,
        "tags_to_remove": sorted(tags_to_remove),
    }


def plan_is_empty(plan):
    return not (plan["version"] or plan["config"] or plan["encryption"] or plan["tags_to_set"] or plan["tags_to_remove"])


def apply_plan_locally(cluster, plan):
    """The cluster as it will look once the plan is applied (for check mode and diff)."""
    after = dict(cluster)
    if plan["version"]:
        after["version"] = plan["version"]
    for payload in plan["config"]:
        if "logging" in payload:
            after["logging"] = payload["logging"]
        if "resourcesVpcConfig" in payload:
            after["resourcesVpcConfig"] = dict(cluster.get("resourcesVpcConfig") or {}, **payload["resourcesVpcConfig"])
        if "accessConfig" in payload:
            after["accessConfig"] = dict(cluster.get("accessConfig") or {}, **payload["accessConfig"])
    if plan["encryption"]:
        after["encryptionConfig"] = [{"resources": ["secrets"], "provider": {"keyArn": plan["encryption"]}}]
    tags = dict(cluster.get("tags") or {})
    for key in plan["tags_to_remove"]:
        tags.pop(key, None)
    tags.update(plan["tags_to_set"])
    after["tags"] = tags
    return after


def cluster_from_request(request):
    """What a cluster about to be created looks like (check mode), in DescribeCluster's shape."""
    cluster = {
        "name": request["name"],
        "roleArn": request["roleArn"],
        "version": request.get("version"),
        "status": None,
        "resourcesVpcConfig": dict(request["resourcesVpcConfig"]),
        "tags": dict(request.get("tags") or {}),
    }
    for key in ("logging", "encryptionConfig", "accessConfig", "kubernetesNetworkConfig"):
        if key in request:
            cluster[key] = request[key]
    return cluster


def oidc_issuer(cluster):
    return ((cluster.get("identity") or {}).get("oidc") or {}).get("issuer")


def oidc_provider_arn_for(cluster_arn, issuer):
    """IAM ARN of the OIDC provider for an issuer, in the cluster's partition and account."""
    if not cluster_arn or not issuer:
        return None
    parts = cluster_arn.split(":")
    partition, account = parts[1], parts[4]
    return f"arn:{partition}:iam::{account}:oidc-provider/{issuer.split('://', 1)[-1]}"


def describe_result(cluster, oidc_provider_arn=None):
    """The module's `cluster` return value."""
    if not cluster:
        return {}
    vpc = cluster.get("resourcesVpcConfig") or {}
    return {
        "name": cluster.get("name"),
        "arn": cluster.get("arn"),
        "status": cluster.get("status"),
        "endpoint": cluster.get("endpoint"),
        "certificate_authority": (cluster.get("certificateAuthority") or {}).get("data"),
        "version": cluster.get("version"),
        "platform_version": cluster.get("platformVersion"),
        "role_arn": cluster.get("roleArn"),
        "vpc_id": vpc.get("vpcId"),
        "subnet_ids": sorted(vpc.get("subnetIds") or []),
        "security_group_ids": sorted(vpc.get("securityGroupIds") or []),
        "cluster_security_group_id": vpc.get("clusterSecurityGroupId"),
        "endpoint_public_access": vpc.get("endpointPublicAccess"),
        "endpoint_private_access": vpc.get("endpointPrivateAccess"),
        "public_access_cidrs": sorted(vpc.get("publicAccessCidrs") or []),
        "service_ipv4_cidr": (cluster.get("kubernetesNetworkConfig") or {}).get("serviceIpv4Cidr"),
        "logging": enabled_log_types(cluster.get("logging")),
        "authentication_mode": (cluster.get("accessConfig") or {}).get("authenticationMode"),
        "secrets_encryption_kms_key_arn": encryption_key(cluster),
        "oidc_issuer": oidc_issuer(cluster),
        "oidc_provider_arn": oidc_provider_arn,
        "tags": dict(cluster.get("tags") or {}),
    }


def diff_view(cluster):
    """The part of the result worth a diff (no status, no CA)."""
    result = describe_result(cluster)
    for key in ("status", "certificate_authority", "platform_version", "endpoint"):
        result.pop(key, None)
    return result


# ---------------------------------------------------------------------------
# AWS calls
# ---------------------------------------------------------------------------


@EksErrorHandler.list_error_handler("describe EKS cluster", default_value=None)
@AWSRetry.jittered_backoff()
def describe_cluster(client, name):
    return client.describe_cluster(name=name)["cluster"]


def is_role_propagation_error(error):
    """CreateCluster refused because the (new) cluster role cannot be assumed yet (IAM propagation)."""
    if not isinstance(error, botocore.exceptions.ClientError):
        return False
    details = error.response.get("Error", {})
    message = details.get("Message") or ""
    return details.get("Code") == "InvalidParameterException" and "role" in message.lower() and bool(ROLE_NOT_ASSUMABLE.search(message))


@AWSRetry.jittered_backoff()
def _create_cluster_once(client, request):
    return client.create_cluster(**request)["cluster"]


@EksErrorHandler.common_error_handler("create EKS cluster")
def create_cluster(client, request, attempts=ROLE_PROPAGATION_ATTEMPTS, delay=5, max_delay=30, sleep=time.sleep):
    """CreateCluster, tried again with backoff (``attempts`` in all) while the role cannot be assumed yet."""
    for attempt in range(1, attempts + 1):
        try:
            return _create_cluster_once(client, request)
        except botocore.exceptions.ClientError as e:
            if attempt == attempts or not is_role_propagation_error(e):
                raise
            sleep(min(delay * 2 ** (attempt - 1), max_delay))
    return None  # not reached


@EksErrorHandler.common_error_handler("update EKS cluster configuration")
@AWSRetry.jittered_backoff(catch_extra_error_codes=["ResourceInUseException"])
def update_cluster_config(client, name, payload):
    return client.update_cluster_config(name=name, **payload).get("update")


@EksErrorHandler.common_error_handler("update EKS cluster version")
@AWSRetry.jittered_backoff(catch_extra_error_codes=["ResourceInUseException"])
def update_cluster_version(client, name, version):
    return client.update_cluster_version(name=name, version=version).get("update")


@EksErrorHandler.common_error_handler("associate EKS encryption configuration")
@AWSRetry.jittered_backoff(catch_extra_error_codes=["ResourceInUseException"])
def associate_encryption(client, name, key_arn):
    return client.associate_encryption_config(
        clusterName=name, encryptionConfig=[{"resources": ["secrets"], "provider": {"keyArn": key_arn}}],
    ).get("update")


@EksErrorHandler.common_error_handler("describe EKS cluster update")
@AWSRetry.jittered_backoff()
def describe_update(client, name, update_id):
    return client.describe_update(name=name, updateId=update_id)["update"]


@EksErrorHandler.common_error_handler("tag EKS cluster")
@AWSRetry.jittered_backoff()
def tag_cluster(client, arn, tags):
    client.tag_resource(resourceArn=arn, tags=tags)


@EksErrorHandler.common_error_handler("untag EKS cluster")
@AWSRetry.jittered_backoff()
def untag_cluster(client, arn, keys):
    client.untag_resource(resourceArn=arn, tagKeys=list(keys))


def in_use_retries(timeout, max_delay=30):
    """AWSRetry ``retries`` (attempts in all) whose backoff sleeps, each at most ``max_delay``, fit in ``timeout`` seconds."""
    if timeout is None:
        return 10
    return 1 + max(0, int(timeout)) // max_delay


@EksErrorHandler.deletion_error_handler("delete EKS cluster")
def delete_cluster(client, name, timeout=None):
    """DeleteCluster; ResourceInUseException (cluster still CREATING/UPDATING) is retried with backoff within ``timeout`` seconds."""
    retry = AWSRetry.jittered_backoff(retries=in_use_retries(timeout), delay=5, max_delay=30, catch_extra_error_codes=["ResourceInUseException"])
    retry(lambda: client.delete_cluster(name=name))()
    return True


def wait_until_settled(client, name, timeout, delay=15, clock=None, sleep=None):
    """Poll while the cluster is CREATING or UPDATING (EKS refuses to delete it then).

    Returns the last description, None when the cluster is gone; any other
    status (ACTIVE, FAILED, DELETING...) ends the wait. Raises
    EksClusterError when ``timeout`` passes first.
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    deadline = clock() + timeout
    while True:
        cluster = describe_cluster(client, name)
        if cluster is None or cluster.get("status") not in BUSY_STATES:
            return cluster
        if clock() >= deadline:
            raise EksClusterError(
                message=f"Timed out after {timeout} s waiting for EKS cluster {name} to finish {cluster['status']} before deleting it "
                        "(EKS refuses to delete a cluster that is being created or updated)"
            )
        sleep(delay)


@EksErrorHandler.common_error_handler("wait for the EKS cluster")
def wait_for_cluster(client, name, waiter_name, timeout, delay=10):
    attempts = max(1, int(timeout) // delay)
    client.get_waiter(waiter_name).wait(name=name, WaiterConfig={"Delay": delay, "MaxAttempts": attempts})


def wait_for_update(client, name, update, timeout, delay=10, sleep=time.sleep):
    """Poll an EKS update until it is no longer InProgress; raise EksClusterError on failure."""
    if not update or not update.get("id"):
        return update
    deadline = time.monotonic() + timeout
    while update.get("status") == "InProgress":
        if time.monotonic() > deadline:
            raise EksClusterError(message=f"EKS update {update['id']} ({update.get('type')}) still in progress after {timeout} s")
        sleep(delay)
        update = describe_update(client, name, update["id"])
    if update.get("status") != "Successful":
        errors = "; ".join(e.get("errorMessage", "") for e in update.get("errors") or [])
        raise EksClusterError(message=f"EKS update {update['id']} ({update.get('type')}) ended {update.get('status')}: {errors}")
    return update


@EksErrorHandler.list_error_handler("list IAM OIDC providers", default_value=[])
@AWSRetry.jittered_backoff()
def list_oidc_providers(iam):
    return [p["Arn"] for p in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]]


@EksErrorHandler.list_error_handler("get IAM OIDC provider", default_value=None)
@AWSRetry.jittered_backoff()
def get_oidc_provider(iam, arn):
    return iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn)


@EksErrorHandler.common_error_handler("create IAM OIDC provider")
@AWSRetry.jittered_backoff()
def create_oidc_provider(iam, issuer, tags):
    return iam.create_open_id_connect_provider(
        Url=issuer, ClientIDList=[OIDC_CLIENT_ID], Tags=[{"Key": k, "Value": v} for k, v in sorted(tags.items())],
    )["OpenIDConnectProviderArn"]


@EksErrorHandler.common_error_handler("add a client ID to the IAM OIDC provider")
@AWSRetry.jittered_backoff()
def add_oidc_client_id(iam, arn):
    iam.add_client_id_to_open_id_connect_provider(OpenIDConnectProviderArn=arn, ClientID=OIDC_CLIENT_ID)


@EksErrorHandler.deletion_error_handler("delete IAM OIDC provider")
@AWSRetry.jittered_backoff()
def delete_oidc_provider(iam, arn):
    iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=arn)
    return True


def oidc_provider_arns_of_cluster(iam, cluster_name, issuer_arn=None):
    """OIDC providers to delete with a cluster: the issuer's one and any tagged with its name."""
    found = []
    for arn in list_oidc_providers(iam):
        if arn == issuer_arn:
            found.append(arn)
            continue
        provider = get_oidc_provider(iam, arn) or {}
        tags = {t["Key"]: t["Value"] for t in provider.get("Tags", [])}
        if tags.get(OIDC_CLUSTER_TAG) == cluster_name:
            found.append(arn)
    return found
