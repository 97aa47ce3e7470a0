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

Access entries of extra administrators (``admin_principal_arns``): each listed
IAM principal gets a STANDARD access entry, tagged ``trainium.eks/access-entry:
admin``, with AmazonEKSClusterAdminPolicy at cluster scope. The cluster tag
``trainium.eks/admin-entries`` keeps a short hash of each principal listed by
the last run; a hash no longer listed points at an entry that may have to go,
and only an entry carrying the tag is deleted. So a run that changes nothing
reads one ListAssociatedAccessPolicies per listed principal and nothing else.

Zones: CreateCluster fails with UnsupportedAvailabilityZoneException when a
subnet is in a zone where EKS has no room for control planes (it names the
zones that have: ``validZones``; Amazon EKS API Reference, CreateCluster,
Errors). The create is tried once more with the subnets of those zones when
at least two zones are left, and the cluster tag
``trainium.eks/control-plane-skipped-subnets`` records the subnets left out,
so that later runs do not report them as a difference.
"""

from __future__ import annotations

import hashlib
import re
import time

try:
    import botocore
except ImportError:
    pass  # handled by AnsibleAWSModule

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import KUBERNETES_VERSIONS

LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
AUTHENTICATION_MODES = ("CONFIG_MAP", "API_AND_CONFIG_MAP", "API")
# upgradePolicy.supportType: standard support only, or extended support (billed) after it ends.
SUPPORT_TYPES = ("STANDARD", "EXTENDED")
# DescribeClusterVersions' versionStatus of a version past its end of standard support (Amazon EKS API Reference,
# ClusterVersionInformation).
EXTENDED_SUPPORT = "EXTENDED_SUPPORT"
OIDC_CLIENT_ID = "sts.amazonaws.com"
# Tag on the IAM OIDC provider naming its cluster, so that it can be found
# and deleted after the cluster itself is gone.
OIDC_CLUSTER_TAG = "trainium.eks/cluster"
VERSION_PATTERN = re.compile(r"^(\d+)\.(\d+)$")
# Cluster states in which EKS refuses DeleteCluster (ResourceInUseException).
BUSY_STATES = ("CREATING", "UPDATING")
# CreateCluster right after the IAM role was created: the role has not reached EKS yet.
ROLE_NOT_ASSUMABLE = common.ROLE_NOT_ASSUMABLE
ROLE_PROPAGATION_ATTEMPTS = 6
# Extra administrators: access entries of listed IAM principals.
DEFAULT_AUTHENTICATION_MODE = "API"
ADMIN_POLICY_NAME = "AmazonEKSClusterAdminPolicy"
PRINCIPAL_ARN_PATTERN = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$")
# Tag of the access entries the module creates; only those are ever deleted.
ACCESS_ENTRY_TAG = "trainium.eks/access-entry"
ACCESS_ENTRY_TAG_VALUE = "admin"
# Cluster tag: a hash of each principal the last run listed (space-separated,
# sorted); AWS tag values hold 256 characters, 9 per principal.
ADMIN_ENTRIES_TAG = "trainium.eks/admin-entries"
MAX_ADMIN_PRINCIPALS = 25
# The secrets key's own policy (secrets_key_policy): the account-root statement, so that IAM policies keep
# working, and the key's lifecycle actions for the principals that run the collection. These are in no IAM
# policy of docs/iam/ (an alias can be put on any key; a key policy names its key alone).
SECRETS_KEY_ADMIN_ACTIONS = (
    "kms:CancelKeyDeletion", "kms:EnableKey", "kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:UntagResource",
    "kms:UpdateKeyDescription",
)
SECRETS_KEY_ADMINS_SID = "TrainiumEksKeyAdministrators"
MAX_KMS_KEY_ADMINS = 25
# The caller as STS names it (sts:GetCallerIdentity); an assumed-role session stands for its role.
CALLER_ARN_PATTERN = re.compile(r"^arn:(?P<partition>aws[a-z-]*):(?P<service>iam|sts)::(?P<account>[0-9]{12}):(?P<rest>.+)$")
ASSUMED_ROLE_PATTERN = re.compile(r"^assumed-role/(?P<role>[\w+=,.@-]{1,64})/[^/]+$")
# CreateCluster refused a subnet's zone (the control plane's network interfaces
# cannot go there); the error names the zones that can (validZones).
UNSUPPORTED_ZONE_CODE = "UnsupportedAvailabilityZoneException"
# Cluster tag: the asked-for subnets left out at creation because EKS refused
# their zone (space-separated); they are no difference on later runs.
SKIPPED_SUBNETS_TAG = "trainium.eks/control-plane-skipped-subnets"
# The longest tag value EKS takes (Amazon EKS API Reference, TagResource: tag values of 0-256 characters).
TAG_VALUE_MAX = 256


class EksClusterError(common.TrainiumAWSError):
    pass


class EksConfigError(ValueError):
    """A request the module refuses before calling AWS; the message names the values."""


EksErrorHandler = common.error_handler(EksClusterError, "ResourceNotFoundException", "NoSuchEntity")


# ---------------------------------------------------------------------------
# Pure decision logic
# ---------------------------------------------------------------------------


def parse_version(version, option="version"):
    match = VERSION_PATTERN.match(str(version or ""))
    if not match:
        raise EksConfigError(f"{option}: got {version!r}; allowed: a Kubernetes minor version such as '1.34'")
    return int(match.group(1)), int(match.group(2))


def adopted_version(current, desired, policy):
    """The cluster's version when EKS upgraded it past ``desired`` itself, else None.

    With upgradePolicy STANDARD, EKS upgrades a cluster one minor version when the standard support of its version
    ends (Amazon EKS User Guide, "Cluster upgrade policy"; "Understand the Kubernetes version lifecycle on EKS"). A
    cluster found exactly one minor above ``desired`` under that policy, at a version the collection knows
    (``KUBERNETES_VERSIONS``), is adopted: reported, and the node groups and the platform follow the version it runs;
    it cannot be taken back (EKS cannot downgrade). Any other cluster above ``desired`` is refused as before.
    """
    if desired is None or current is None or policy != "STANDARD" or str(current) not in KUBERNETES_VERSIONS:
        return None
    have, want = parse_version(current, "cluster version"), parse_version(desired)
    return str(current) if have[0] == want[0] and have[1] == want[1] + 1 else None


def version_step(current, desired, policy=None):
    """The version to upgrade to, None when nothing to do (or the cluster is adopted); EksConfigError when not allowed."""
    if desired is None or current is None or str(current) == str(desired) or adopted_version(current, desired, policy):
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
    mode = params.get("authentication_mode")
    if mode == "CONFIG_MAP" and params.get("bootstrap_cluster_creator_admin") is False:
        raise EksConfigError("bootstrap_cluster_creator_admin: got False with authentication_mode CONFIG_MAP; allowed: true "
                             "(EKS keeps the creator an administrator in CONFIG_MAP), or authentication_mode API or API_AND_CONFIG_MAP")
    problem = admin_principals_problem(params.get("admin_principal_arns"), mode)
    if problem:
        raise EksConfigError(problem)
    reserved = sorted(set(params.get("tags") or {}) & {ADMIN_ENTRIES_TAG, SKIPPED_SUBNETS_TAG})
    if reserved:
        raise EksConfigError(f"tags: got the key(s) {', '.join(reserved)}; allowed: keys other than these, which the module sets itself "
                             "to remember what it did")


def admin_principals_problem(arns, mode=None):
    """What is wrong with a list of administrator principal ARNs (and the mode they need); None when nothing."""
    if arns is None:
        return None
    for index, arn in enumerate(arns):
        if not isinstance(arn, str) or not PRINCIPAL_ARN_PATTERN.match(arn):
            return (f"admin_principal_arns[{index}]: got {arn!r}; allowed: the ARN of an IAM role or user, such as "
                    "arn:aws:iam::111122223333:role/platform-admins (for an assumed-role session, its role's ARN)")
    duplicates = sorted({arn for arn in arns if arns.count(arn) > 1})
    if duplicates:
        return f"admin_principal_arns: got {duplicates[0]!r} twice; allowed: each principal once"
    if len(arns) > MAX_ADMIN_PRINCIPALS:
        return f"admin_principal_arns: got {len(arns)} principals; allowed: at most {MAX_ADMIN_PRINCIPALS}"
    if arns and mode == "CONFIG_MAP":
        return (f"admin_principal_arns: got {len(arns)} principal(s) with authentication_mode CONFIG_MAP; allowed: "
                "none in CONFIG_MAP (access entries need API or API_AND_CONFIG_MAP)")
    return None


def key_admin_principals(caller_arn, admins=()):
    """The principals the secrets key's policy gives its lifecycle actions to: the caller's and ``admins``.

    ``caller_arn`` is what sts:GetCallerIdentity answers. An assumed-role
    session (``arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION``) stands for its
    role, ``arn:aws:iam::ACCOUNT:role/ROLE``; the session ARN does not carry the
    role's path, so when ``admins`` holds a role of that account with that
    name (role names are unique in an account, whatever the path), that ARN is
    the caller's. Any other ARN (an IAM user or role, a federated user) is used
    as it is. Sorted, each once. Raises ValueError on an ARN that is none of these.
    """
    match = CALLER_ARN_PATTERN.match(str(caller_arn or ""))
    if not match:
        raise ValueError(f"caller_arn: got {caller_arn!r}; allowed: the Arn of sts:GetCallerIdentity (arn:aws:sts::... or arn:aws:iam::...)")
    admins = [str(arn) for arn in admins or []]
    caller = caller_arn
    session = ASSUMED_ROLE_PATTERN.match(match["rest"]) if match["service"] == "sts" else None
    if session:
        prefix = f"arn:{match['partition']}:iam::{match['account']}:role/"
        caller = next((arn for arn in admins if arn.startswith(prefix) and arn.rsplit("/", 1)[1] == session["role"]),
                      prefix + session["role"])
    return sorted(set([caller] + admins))


def secrets_key_policy(caller_arn, admins=()):
    """The key policy the eks_cluster role gives the secrets key (a dict; amazon.aws.kms_key takes its JSON).

    Statement one is AWS's default key policy statement: the account's IAM
    policies decide (the reads and EnableKeyRotation of docs/iam/ stay
    there). Statement two gives SECRETS_KEY_ADMIN_ACTIONS to
    ``key_admin_principals(caller_arn, admins)``: CreateKey's lockout safety
    check wants the caller able to call PutKeyPolicy on the new key, and the
    teardown (ScheduleKeyDeletion) and a later run (CancelKeyDeletion,
    EnableKey, UntagResource, UpdateKeyDescription) need them on this key only.
    """
    principals = key_admin_principals(caller_arn, admins)
    match = CALLER_ARN_PATTERN.match(caller_arn)
    root = f"arn:{match['partition']}:iam::{match['account']}:root"
    return {
        "Version": "2012-10-17",
        "Id": "trainium-eks-secrets-key",
        "Statement": [
            {"Sid": "AccountIamPolicies", "Effect": "Allow", "Principal": {"AWS": root}, "Action": "kms:*", "Resource": "*"},
            {"Sid": SECRETS_KEY_ADMINS_SID, "Effect": "Allow", "Principal": {"AWS": principals},
             "Action": list(SECRETS_KEY_ADMIN_ACTIONS), "Resource": "*"},
        ],
    }


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
    access = {"authenticationMode": params.get("authentication_mode") or DEFAULT_AUTHENTICATION_MODE}
    if params.get("bootstrap_cluster_creator_admin") is not None:
        access["bootstrapClusterCreatorAdminPermissions"] = params["bootstrap_cluster_creator_admin"]
    request["accessConfig"] = access
    if params.get("upgrade_policy"):
        request["upgradePolicy"] = {"supportType": params["upgrade_policy"]}
    tags = dict(params.get("tags") or {})
    hint = admin_entries_tag_value(principal_key(arn) for arn in params.get("admin_principal_arns") or [])
    if hint:
        # Before the entries exist: a run cut short after creating one still knows it.
        tags[ADMIN_ENTRIES_TAG] = hint
    if tags:
        request["tags"] = tags
    return request


def encryption_key(cluster):
    for entry in cluster.get("encryptionConfig") or []:
        if "secrets" in entry.get("resources", []):
            return entry.get("provider", {}).get("keyArn")
    return None


def skipped_subnets(cluster):
    """The subnets left out of the cluster at creation because EKS refused their zone."""
    return set(((cluster.get("tags") or {}).get(SKIPPED_SUBNETS_TAG) or "").split())


def valid_zones(error):
    """The zones an UnsupportedAvailabilityZoneException names as supported (a list), None for any other error."""
    if common.error_code(error) != UNSUPPORTED_ZONE_CODE:
        return None
    return list(error.response.get("validZones") or [])


def request_in_valid_zones(request, subnet_zones, zones_ok):
    """CreateCluster's ``request`` with only the subnets in ``zones_ok``, and the subnets left out.

    ``subnet_zones``: subnet ID -> (zone name, zone ID); a zone counts as
    supported when its name or its ID is in ``zones_ok``. Raises
    EksConfigError when the subnets left span fewer than two zones (EKS's
    minimum).
    """
    subnets = list(request["resourcesVpcConfig"]["subnetIds"])
    supported = set(zones_ok)
    kept = [subnet for subnet in subnets if supported & set(subnet_zones.get(subnet, ()))]
    left_out = [subnet for subnet in subnets if subnet not in kept]
    kept_zones = sorted({subnet_zones[subnet][0] for subnet in kept})
    if len(kept_zones) < 2:
        refused = sorted({subnet_zones[subnet][0] for subnet in left_out if subnet in subnet_zones})
        raise EksConfigError(
            f"subnets: EKS refused cluster {request['name']}'s control plane in {', '.join(refused) or 'their zones'} "
            f"({UNSUPPORTED_ZONE_CODE}); the other subnets are in {len(kept_zones)} zone(s) ({', '.join(kept_zones) or 'none'}); "
            f"allowed: subnets in at least two of the zones EKS named, {', '.join(sorted(supported)) or '(none)'} "
            "(Amazon EKS API Reference, CreateCluster)")
    record = " ".join(left_out)
    if len(record) > TAG_VALUE_MAX:
        raise EksConfigError(
            f"subnets: EKS refused cluster {request['name']}'s control plane in the zones of {len(left_out)} of its subnets, more than "
            f"the tag {SKIPPED_SUBNETS_TAG} can record ({TAG_VALUE_MAX} characters); allowed: subnets in the zones EKS named, "
            f"{', '.join(sorted(supported))}")
    retry = dict(request, resourcesVpcConfig=dict(request["resourcesVpcConfig"], subnetIds=kept))
    retry["tags"] = dict(request.get("tags") or {}, **{SKIPPED_SUBNETS_TAG: record})
    return retry, left_out


def immutable_differences(cluster, params):
    """Asked-for values that differ from the cluster and that EKS cannot change in place."""
    differences = []
    vpc = cluster.get("resourcesVpcConfig") or {}
    if params.get("role_arn") and cluster.get("roleArn") and params["role_arn"] != cluster["roleArn"]:
        differences.append(f"role_arn: cluster has {cluster['roleArn']}, asked {params['role_arn']}")
    # Only a subnet asked for and not in the cluster can have been left out.
    left_out = skipped_subnets(cluster) - set(vpc.get("subnetIds") or ())
    if params.get("subnets") is not None and vpc.get("subnetIds") and set(params["subnets"]) - left_out != set(vpc["subnetIds"]):
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


def upgrade_policy(cluster):
    """The cluster's upgradePolicy.supportType, None when the answer has none (unknown)."""
    return (cluster.get("upgradePolicy") or {}).get("supportType")


def plan_update(cluster, params, purge_tags=True):
    """What to change on an existing cluster, in the shape of ``trainium_common.new_plan``.

    Keys: ``errors`` (every difference that cannot be applied, see
    ``refusal``), ``version`` (str or None), ``config`` (a list of
    UpdateClusterConfig payloads, one kind of change each, as EKS requires),
    ``encryption`` (key ARN to associate or None), ``tags_to_set`` (dict),
    ``tags_to_remove`` (list), ``changed``.
    """
    errors = immutable_differences(cluster, params)
    version = None
    try:
        version = version_step(cluster.get("version"), params.get("version"), upgrade_policy(cluster))
    except EksConfigError as e:
        errors.append(str(e))

    config = []
    if params.get("logging") is not None and "logging" in cluster and enabled_log_types(cluster["logging"]) != sorted(set(params["logging"])):
        config.append({"logging": logging_request(params["logging"])})
    vpc_update = endpoint_update(cluster, params)
    if vpc_update:
        config.append({"resourcesVpcConfig": vpc_update})
    current_mode = (cluster.get("accessConfig") or {}).get("authenticationMode")
    if params.get("authentication_mode") and current_mode and params["authentication_mode"] != current_mode:
        config.append({"accessConfig": {"authenticationMode": params["authentication_mode"]}})
    # Compared only when DescribeCluster reports it (moto 5.2.5 does not): an
    # unknown policy is not a difference, or every run would update it again.
    current_policy = upgrade_policy(cluster)
    if params.get("upgrade_policy") and current_policy and params["upgrade_policy"] != current_policy:
        config.append({"upgradePolicy": {"supportType": params["upgrade_policy"]}})

    encryption = None
    if params.get("secrets_encryption_kms_key_arn") and not encryption_key(cluster):
        encryption = params["secrets_encryption_kms_key_arn"]

    desired_tags = params.get("tags")
    if desired_tags is not None:
        # The access entry convergence owns the first tag (see plan_access_entries);
        # the second is a fact of the cluster's creation.
        kept = {key: value for key, value in (cluster.get("tags") or {}).items() if key in (ADMIN_ENTRIES_TAG, SKIPPED_SUBNETS_TAG)}
        desired_tags = dict(desired_tags, **kept)
    tags = common.tag_diff(cluster.get("tags"), desired_tags, purge_tags)
    plan = common.new_plan(errors, tags, version=version, config=config, encryption=encryption)
    # Not a change: what the run found and takes as it is.
    plan["adopted_version"] = None if errors else adopted_version(cluster.get("version"), params.get("version"), upgrade_policy(cluster))
    return plan


def asks_standard_policy(plan):
    """Whether the plan moves the cluster's upgradePolicy to STANDARD."""
    return any((payload.get("upgradePolicy") or {}).get("supportType") == "STANDARD" for payload in plan["config"])


@EksErrorHandler.common_error_handler("describe EKS cluster versions (needs eks:DescribeClusterVersions)")
@AWSRetry.jittered_backoff()
def version_information(client, version):
    """DescribeClusterVersions' entry for one Kubernetes version, supported or not ({} when EKS lists none)."""
    answer = client.describe_cluster_versions(clusterVersions=[str(version)], includeAll=True)
    return next(iter(answer.get("clusterVersions") or []), {})


def hold_standard_policy(cluster, plan, information):
    """(plan, note): the plan without its move to STANDARD when the version the cluster runs after the plan is in
    extended support, and what the run says about it; (plan, None) otherwise.

    EKS moves a cluster to upgradePolicy STANDARD only while its version is in standard support ("You cannot disable
    extended support once your cluster has entered it", Amazon EKS User Guide, "Disable EKS extended support"). The
    cluster stays EXTENDED until it runs a version in standard support; the run says so and goes on.
    """
    if not asks_standard_policy(plan) or information.get("versionStatus") != EXTENDED_SUPPORT:
        return plan, None
    config = [payload for payload in plan["config"] if "upgradePolicy" not in payload]
    held = common.new_plan(plan["errors"], (plan["tags_to_set"], plan["tags_to_remove"]),
                           version=plan["version"], config=config, encryption=plan["encryption"])
    held["adopted_version"] = plan.get("adopted_version")
    version = plan["version"] or cluster.get("version")
    since = information.get("endOfStandardSupportDate")
    since = f" since {since:%Y-%m-%d}" if hasattr(since, "strftime") else (f" since {since}" if since else "")
    note = (f"upgrade_policy: STANDARD is not applied to EKS cluster {cluster.get('name')}: it runs Kubernetes {version}, in extended "
            f"support{since}, and EKS moves a cluster to STANDARD only while its version is in standard support (Amazon EKS User "
            "Guide, \"Disable EKS extended support\"). It stays EXTENDED, billed at the extended support rate, until it runs a "
            "version in standard support: raise the Kubernetes version one minor at a time (trainium_kubernetes_version), or set "
            "upgrade_policy EXTENDED (eks_cluster_upgrade_policy) to keep it there knowingly")
    return held, note


def adoption_note(cluster, desired):
    """What the run says about a cluster EKS upgraded itself."""
    return (f"EKS cluster {cluster.get('name')} runs Kubernetes {cluster.get('version')}, one minor version above the {desired} asked for: "
            "EKS upgrades a cluster itself when the standard support of its version ends (upgradePolicy STANDARD), or someone "
            f"upgraded it. The run adopts {cluster.get('version')} (node groups and platform follow it; EKS cannot downgrade); set "
            f"trainium_kubernetes_version: \"{cluster.get('version')}\" in the inventory, and the validation pass checks that the pinned "
            "components (Volcano) support it")


def refusal(cluster, errors):
    """The failure message for a plan's errors."""
    return f"cannot change {len(errors)} setting(s) of EKS cluster {cluster.get('name')}: " + "; ".join(errors)


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
        if "upgradePolicy" in payload:
            after["upgradePolicy"] = dict(payload["upgradePolicy"])
    if plan["encryption"]:
        after["encryptionConfig"] = [{"resources": ["secrets"], "provider": {"keyArn": plan["encryption"]}}]
    after["tags"] = common.tags_after(cluster.get("tags"), plan["tags_to_set"], plan["tags_to_remove"])
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
    for key in ("logging", "encryptionConfig", "accessConfig", "kubernetesNetworkConfig", "upgradePolicy"):
        if key in request:
            cluster[key] = request[key]
    return cluster


def admin_policy_arn(cluster_arn):
    """AmazonEKSClusterAdminPolicy in the cluster's partition."""
    partition = (cluster_arn or "arn:aws").split(":")[1]
    return f"arn:{partition}:eks::aws:cluster-access-policy/{ADMIN_POLICY_NAME}"


def principal_key(arn):
    """The short hash of a principal ARN kept in the cluster tag (8 hex digits)."""
    return hashlib.sha256(arn.encode("utf-8")).hexdigest()[:8]


def admin_entries_hint(cluster):
    """The principal hashes of the cluster tag, as a set."""
    return set(((cluster.get("tags") or {}).get(ADMIN_ENTRIES_TAG) or "").split())


def admin_entries_tag_value(keys):
    """The cluster tag's value for a set of principal hashes; empty for none."""
    return " ".join(sorted(set(keys)))


def access_entries_usable(cluster):
    """Whether the cluster's authentication mode lets it have access entries (unknown: yes)."""
    return (cluster.get("accessConfig") or {}).get("authenticationMode") != "CONFIG_MAP"


def is_admin(policies, policy_arn):
    """Whether associated access policies include ``policy_arn`` at cluster scope."""
    return any(p.get("policyArn") == policy_arn and (p.get("accessScope") or {}).get("type") == "cluster" for p in policies or [])


def entry_is_ours(entry):
    """Whether an access entry carries the tag of the entries this module creates."""
    return (entry or {}).get("tags", {}).get(ACCESS_ENTRY_TAG) == ACCESS_ENTRY_TAG_VALUE


def stale_keys(cluster, wanted):
    """Hashes of the cluster tag whose principals are no longer listed."""
    return admin_entries_hint(cluster) - {principal_key(arn) for arn in wanted}


def plan_access_entries(cluster, wanted, policies, stale_entries):
    """What to do so that exactly the ``wanted`` principals are the module's administrators.

    ``policies``: for each wanted ARN, its associated access policies, None
    when it has no access entry. ``stale_entries``: the entries found for
    hashes of the cluster tag that are no longer listed, {ARN: DescribeAccessEntry
    answer}. Returns {"create": [...], "associate": [...], "delete": [...],
    "hint_before": str, "hint_after": str, "before": [...], "changed": bool}:
    entries to create (STANDARD, tagged), principals to associate the admin
    policy with at cluster scope, entries to delete (only tagged ones), the
    cluster tag's value now and after, and the principals that are
    administrators through the module now (for the diff).
    """
    policy = admin_policy_arn(cluster.get("arn"))
    create = [arn for arn in wanted if policies.get(arn) is None]
    associate = [arn for arn in wanted if not is_admin(policies.get(arn), policy)]
    delete = sorted(arn for arn, entry in stale_entries.items() if entry_is_ours(entry))
    before = sorted([arn for arn in wanted if is_admin(policies.get(arn), policy)] + delete)
    hint_before = (cluster.get("tags") or {}).get(ADMIN_ENTRIES_TAG) or ""
    hint_after = admin_entries_tag_value(principal_key(arn) for arn in wanted)
    return {"create": create, "associate": associate, "delete": delete, "hint_before": hint_before, "hint_after": hint_after,
            "before": before, "changed": bool(create or associate or delete)}


def oidc_issuer(cluster):
    return ((cluster.get("identity") or {}).get("oidc") or {}).get("issuer")


def oidc_provider_arn_for(cluster_arn, issuer):
    """IAM ARN of the OIDC provider for an issuer, in the cluster's partition and account."""
    if not cluster_arn or not issuer:
        return None
    parts = cluster_arn.split(":")
    partition, account = parts[1], parts[4]
    return f"arn:{partition}:iam::{account}:oidc-provider/{issuer.split('://', 1)[-1]}"


# result key: DescribeCluster field, for the fields returned as they are
_RESULT_FIELDS = {"name": "name", "arn": "arn", "status": "status", "endpoint": "endpoint", "version": "version",
                  "platform_version": "platformVersion", "role_arn": "roleArn"}
_RESULT_VPC_FIELDS = {"vpc_id": "vpcId", "cluster_security_group_id": "clusterSecurityGroupId",
                      "endpoint_public_access": "endpointPublicAccess", "endpoint_private_access": "endpointPrivateAccess"}
_RESULT_VPC_LISTS = {"subnet_ids": "subnetIds", "security_group_ids": "securityGroupIds", "public_access_cidrs": "publicAccessCidrs"}


def describe_result(cluster, oidc_provider_arn=None):
    """The module's `cluster` return value."""
    if not cluster:
        return {}
    vpc = cluster.get("resourcesVpcConfig") or {}
    result = {key: cluster.get(field) for key, field in _RESULT_FIELDS.items()}
    result.update({key: vpc.get(field) for key, field in _RESULT_VPC_FIELDS.items()})
    result.update({key: sorted(vpc.get(field) or []) for key, field in _RESULT_VPC_LISTS.items()})
    result.update({
        "certificate_authority": (cluster.get("certificateAuthority") or {}).get("data"),
        "service_ipv4_cidr": (cluster.get("kubernetesNetworkConfig") or {}).get("serviceIpv4Cidr"),
        "logging": enabled_log_types(cluster.get("logging")),
        "authentication_mode": (cluster.get("accessConfig") or {}).get("authenticationMode"),
        "upgrade_policy": upgrade_policy(cluster),
        "secrets_encryption_kms_key_arn": encryption_key(cluster),
        "oidc_issuer": oidc_issuer(cluster),
        "oidc_provider_arn": oidc_provider_arn,
        "tags": dict(cluster.get("tags") or {}),
    })
    return result


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


# CreateCluster refused because the (new) cluster role cannot be assumed yet (IAM propagation).
is_role_propagation_error = common.is_role_propagation_error


@AWSRetry.jittered_backoff()
def _create_cluster_once(client, request):
    return client.create_cluster(**request)["cluster"]


@EksErrorHandler.common_error_handler("create EKS cluster")
def create_cluster(client, request, attempts=ROLE_PROPAGATION_ATTEMPTS, delay=5, max_delay=30, sleep=time.sleep, subnet_zones=None):
    """CreateCluster, tried again with backoff (``attempts`` in all) while the role cannot be assumed yet.

    With ``subnet_zones`` (a function: subnet IDs -> {subnet: (zone name,
    zone ID)}), a refused zone (UnsupportedAvailabilityZoneException) makes
    one more request with the subnets of the zones EKS named
    (``request_in_valid_zones``; EksConfigError when fewer than two are left);
    the cluster's tag SKIPPED_SUBNETS_TAG then names the subnets left out.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return _create_cluster_once(client, request)
        except botocore.exceptions.ClientError as e:
            zones_ok = valid_zones(e)
            if zones_ok is not None and subnet_zones is not None and SKIPPED_SUBNETS_TAG not in (request.get("tags") or {}):
                # Once, and not counted as an attempt of the role's propagation.
                request = request_in_valid_zones(request, subnet_zones(request["resourcesVpcConfig"]["subnetIds"]), zones_ok)[0]
                attempt -= 1
                continue
            if attempt >= attempts or not is_role_propagation_error(e):
                raise
            sleep(min(delay * 2 ** (attempt - 1), max_delay))


@EksErrorHandler.common_error_handler("describe the cluster's subnets")
@AWSRetry.jittered_backoff()
def describe_subnet_zones(ec2, subnet_ids):
    """subnet ID -> (zone name, zone ID), for ``subnet_ids``."""
    subnets = ec2.describe_subnets(SubnetIds=list(subnet_ids))["Subnets"]
    return {subnet["SubnetId"]: (subnet["AvailabilityZone"], subnet.get("AvailabilityZoneId", "")) for subnet in subnets}


@EksErrorHandler.common_error_handler("start an EKS cluster update")
def _start_update(client, operation, timeout, **request):
    """Run an EKS update call; a refusal because another update runs is retried within ``timeout`` seconds."""
    return common.retry_in_use(lambda: getattr(client, operation)(**request), timeout).get("update")


def update_cluster_config(client, name, payload, timeout=None):
    return _start_update(client, "update_cluster_config", timeout, name=name, **payload)


def update_cluster_version(client, name, version, timeout=None):
    return _start_update(client, "update_cluster_version", timeout, name=name, version=version)


def associate_encryption(client, name, key_arn, timeout=None):
    config = [{"resources": ["secrets"], "provider": {"keyArn": key_arn}}]
    return _start_update(client, "associate_encryption_config", timeout, clusterName=name, encryptionConfig=config)


@EksErrorHandler.common_error_handler("describe EKS cluster update")
@AWSRetry.jittered_backoff()
def describe_update(client, name, update_id):
    return client.describe_update(name=name, updateId=update_id)["update"]


@EksErrorHandler.deletion_error_handler("delete EKS cluster")
def delete_cluster(client, name, timeout=None, clock=None, sleep=None):
    """DeleteCluster; ResourceInUseException (cluster still CREATING/UPDATING) is retried with backoff within ``timeout`` seconds."""
    common.retry_in_use(lambda: client.delete_cluster(name=name), timeout, clock=clock, sleep=sleep)
    return True


def wait_until_settled(client, name, timeout, delay=15, clock=None, sleep=None):
    """Poll while the cluster is CREATING or UPDATING (EKS refuses to delete it then).

    Returns the last description, None when the cluster is gone; any other
    status (ACTIVE, FAILED, DELETING...) ends the wait. Raises
    EksClusterError when ``timeout`` passes first.
    """
    return common.wait_until_settled(lambda: describe_cluster(client, name), BUSY_STATES, timeout, f"EKS cluster {name}",
                                     delay=delay, error=EksClusterError, clock=clock, sleep=sleep)


def wait_for_cluster(client, name, timeout, gone=False, delay=10, clock=None, sleep=None):
    """Poll until the cluster is ACTIVE (FAILED or DELETING fail at once) or, with ``gone``, deleted."""
    return common.wait_for_status(lambda: describe_cluster(client, name), "ACTIVE", timeout, f"EKS cluster {name}", gone=gone,
                                  failed=() if gone else ("FAILED", "DELETING"), delay=delay, error=EksClusterError, clock=clock, sleep=sleep)


def wait_for_update(client, name, update, timeout, delay=10, clock=None, sleep=None):
    """Poll an EKS update until it is no longer InProgress; raise EksClusterError unless it ends Successful."""
    if not update or not update.get("id"):
        return update
    if update.get("status") == "InProgress":
        update = common.wait_for(lambda: describe_update(client, name, update["id"]), lambda u: u.get("status") != "InProgress", timeout,
                                 f"EKS update {update['id']} ({update.get('type')})", "to finish", delay=delay, error=EksClusterError,
                                 clock=clock, sleep=sleep)
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
        Url=issuer, ClientIDList=[OIDC_CLIENT_ID], Tags=common.tag_list(tags),
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


def oidc_provider_arns_of_cluster(iam, cluster_name):
    """OIDC providers to delete with a cluster: those tagged with its name, its issuer's included.

    A provider of the issuer without that tag was made by someone else (eksctl, by hand) and stays: the
    teardown policy may delete only providers that carry the tag (docs/iam-policy.md).
    """
    found = []
    for arn in list_oidc_providers(iam):
        provider = get_oidc_provider(iam, arn) or {}
        tags = {t["Key"]: t["Value"] for t in provider.get("Tags", [])}
        if tags.get(OIDC_CLUSTER_TAG) == cluster_name:
            found.append(arn)
    return found


# ------------------------------------------------------------ access entries


@EksErrorHandler.list_error_handler("list the access policies of an EKS access entry", default_value=None)
@AWSRetry.jittered_backoff()
def list_associated_policies(client, cluster_name, principal_arn):
    """The access policies associated with a principal's entry; None when it has no entry."""
    return common.all_items(client, "list_associated_access_policies", "associatedAccessPolicies", clusterName=cluster_name, principalArn=principal_arn)


@EksErrorHandler.list_error_handler("list the access entries of an EKS cluster", default_value=[])
@AWSRetry.jittered_backoff()
def list_access_entries(client, cluster_name):
    return common.all_items(client, "list_access_entries", "accessEntries", clusterName=cluster_name)


@EksErrorHandler.list_error_handler("describe an EKS access entry", default_value=None)
@AWSRetry.jittered_backoff()
def describe_access_entry(client, cluster_name, principal_arn):
    return client.describe_access_entry(clusterName=cluster_name, principalArn=principal_arn)["accessEntry"]


@EksErrorHandler.common_error_handler("create an EKS access entry")
@AWSRetry.jittered_backoff()
def create_access_entry(client, cluster_name, principal_arn, tags):
    return client.create_access_entry(clusterName=cluster_name, principalArn=principal_arn, type="STANDARD", tags=dict(tags))["accessEntry"]


@EksErrorHandler.common_error_handler("associate AmazonEKSClusterAdminPolicy with an EKS access entry")
@AWSRetry.jittered_backoff()
def associate_admin_policy(client, cluster_name, principal_arn, policy_arn):
    client.associate_access_policy(clusterName=cluster_name, principalArn=principal_arn, policyArn=policy_arn,
                                   accessScope={"type": "cluster"})


@EksErrorHandler.deletion_error_handler("delete an EKS access entry")
@AWSRetry.jittered_backoff()
def delete_access_entry(client, cluster_name, principal_arn):
    client.delete_access_entry(clusterName=cluster_name, principalArn=principal_arn)
    return True


def read_access_entries(client, cluster, wanted):
    """(policies of each wanted principal, stale entries): the reads ``plan_access_entries`` needs.

    One ListAssociatedAccessPolicies per wanted principal; ListAccessEntries
    and a DescribeAccessEntry per candidate only when the cluster tag names a
    principal no longer listed.
    """
    name = cluster["name"]
    policies = {arn: list_associated_policies(client, name, arn) for arn in wanted}
    stale = stale_keys(cluster, wanted)
    stale_entries = {}
    if stale:
        for arn in list_access_entries(client, name):
            if principal_key(arn) in stale and arn not in wanted:
                entry = describe_access_entry(client, name, arn)
                if entry is not None:
                    stale_entries[arn] = entry
    return policies, stale_entries


def foreign_entries(client, cluster, wanted, policies):
    """The listed principals whose access entry the module did not make and that are not cluster admins.

    Making them admins would raise an entry someone else owns (a namespace-scoped
    one, say), and the module would never take that back: such principals are
    refused. One DescribeAccessEntry per principal with a non-admin entry; none
    on a converged cluster.
    """
    policy = admin_policy_arn(cluster.get("arn"))
    candidates = [arn for arn in wanted if policies.get(arn) is not None and not is_admin(policies.get(arn), policy)]
    return sorted(arn for arn in candidates if not entry_is_ours(describe_access_entry(client, cluster["name"], arn)))


def apply_access_entries(client, cluster, plan, entry_tags):
    """Carry out ``plan_access_entries``'s plan; the cluster tag first grows, then shrinks, so a cut-short run forgets nothing."""
    name, arn = cluster["name"], cluster["arn"]
    before = set(plan["hint_before"].split())
    after = set(plan["hint_after"].split())
    grown = admin_entries_tag_value(before | after)
    if grown != plan["hint_before"]:
        common.update_tags(client, arn, {ADMIN_ENTRIES_TAG: grown}, [])
    for principal in plan["create"]:
        create_access_entry(client, name, principal, entry_tags)
    policy = admin_policy_arn(arn)
    for principal in plan["associate"]:
        associate_admin_policy(client, name, principal, policy)
    for principal in plan["delete"]:
        delete_access_entry(client, name, principal)
    if plan["hint_after"] != grown:
        if plan["hint_after"]:
            common.update_tags(client, arn, {ADMIN_ENTRIES_TAG: plan["hint_after"]}, [])
        else:
            common.update_tags(client, arn, {}, [ADMIN_ENTRIES_TAG])


def tags_after_access_entries(tags, plan):
    """The cluster's tags once the plan's cluster tag is written (check mode, results)."""
    tags = {key: value for key, value in (tags or {}).items() if key != ADMIN_ENTRIES_TAG}
    if plan["hint_after"]:
        tags[ADMIN_ENTRIES_TAG] = plan["hint_after"]
    return tags
