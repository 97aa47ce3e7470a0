# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Read IAM roles, KMS keys and CloudWatch log groups in one pass and say whether they are in place.

Behind trainium.eks.account_resources_info. Each ``read_*`` function makes the
describe calls that amazon.aws's iam_role, kms_key and cloudwatchlogs_log_group
make before they decide to change something; each ``*_differences`` function
compares what was read with the options the role gives those modules and
returns one sentence per difference. EKS add-ons are compared by
trainium.eks.eks_addon's own planner (``trainium_eks_addon.plan_changes``). The comparison is at least as strict as
the modules' own (a trust policy must be equal after key sorting, tags and
attached policies exactly equal), so "in place" means that the module would
report "ok"; when in doubt it reports a difference and the module runs.
"""

from __future__ import annotations

import json

from ansible_collections.amazon.aws.plugins.module_utils.botocore import is_boto3_error_code
from ansible_collections.amazon.aws.plugins.module_utils.policy import compare_policies
from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks_addon as ad
from ansible_collections.trainium.eks.plugins.module_utils.trainium_eks import oidc_issuer
from ansible_collections.trainium.eks.plugins.module_utils.trainium_eks import oidc_provider_arn_for


class TrainiumAccountError(common.TrainiumAWSError):
    pass


AccountErrorHandler = common.error_handler(TrainiumAccountError)

# Placeholders a trust policy may hold, filled in from the OIDC issuer of oidc_cluster_name.
OIDC_PROVIDER_ARN = "${oidc_provider_arn}"
OIDC_HOST = "${oidc_host}"

# UpdateAddon's fields in the sentences of addon_differences.
ADDON_FIELDS = {"addonVersion": "version", "serviceAccountRoleArn": "service account role", "configurationValues": "configuration"}


def _string_tags(tags):
    return {str(key): str(value) for key, value in (tags or {}).items()}


def _key_value_tags(pairs, key="Key", value="Value"):
    return {pair[key]: pair[value] for pair in pairs or []}


def _canonical(document):
    """A policy document as sorted JSON (keys sorted; list order kept: a reordered list counts as a difference)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def fill_oidc(document, provider_arn, host):
    """``document`` with the OIDC placeholders replaced (None when it holds one and there is no issuer)."""
    text = json.dumps(document)
    if OIDC_PROVIDER_ARN not in text and OIDC_HOST not in text:
        return document
    if not provider_arn or not host:
        return None
    return json.loads(text.replace(OIDC_PROVIDER_ARN, provider_arn).replace(OIDC_HOST, host))


# ------------------------------------------------------------------- reads


def read_oidc(eks, cluster_name):
    """(provider ARN, issuer host) of an EKS cluster's OIDC issuer; (None, None) without the cluster or an issuer."""
    cluster = ad.describe_cluster(eks, cluster_name)
    if not cluster:
        return None, None
    issuer = oidc_issuer(cluster)
    if not issuer:
        return None, None
    return oidc_provider_arn_for(cluster.get("arn"), issuer), issuer.split("://", 1)[-1]


@AccountErrorHandler.common_error_handler("read the IAM role")
@AWSRetry.jittered_backoff()
def read_role(iam, name):
    """{"role": GetRole's Role, "managed_policies": [ARN, ...]}, None when there is no such role."""
    try:
        role = iam.get_role(RoleName=name)["Role"]
    except is_boto3_error_code("NoSuchEntity"):
        return None
    attached = common.all_items(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=name)
    return {"role": role, "managed_policies": sorted(p["PolicyArn"] for p in attached)}


@AccountErrorHandler.common_error_handler("read the KMS key")
@AWSRetry.jittered_backoff()
def read_key(kms, alias, policy=False):
    """{"key": DescribeKey's KeyMetadata, "rotation": bool, "tags": {...}, "policy": dict or None} of the key an alias
    names, None without it. ``policy``: read the key policy too (None when it cannot be read: a difference then)."""
    alias_name = alias if alias.startswith("alias/") else "alias/" + alias
    aliases = common.all_items(kms, "list_aliases", "Aliases")
    key_id = next((a.get("TargetKeyId") for a in aliases if a.get("AliasName") == alias_name), None)
    if not key_id:
        return None
    key = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    rotation = None
    if key.get("KeyState") == "Enabled":
        rotation = bool(kms.get_key_rotation_status(KeyId=key_id).get("KeyRotationEnabled"))
    tags = common.all_items(kms, "list_resource_tags", "Tags", KeyId=key_id)
    found = {"key": key, "rotation": rotation, "tags": _key_value_tags(tags, "TagKey", "TagValue"), "policy": None}
    if policy and key.get("KeyState") == "Enabled":
        # As amazon.aws.kms_key reads it before it decides to call PutKeyPolicy (the policy named "default").
        try:
            found["policy"] = json.loads(kms.get_key_policy(KeyId=key_id, PolicyName="default")["Policy"])
        except is_boto3_error_code("AccessDeniedException"):
            found["policy"] = None
    return found


@AccountErrorHandler.common_error_handler("read the CloudWatch log group")
@AWSRetry.jittered_backoff()
def read_log_group(logs, name):
    """{"group": the DescribeLogGroups entry, "tags": {...}}, None when there is no such log group."""
    groups = common.all_items(logs, "describe_log_groups", "logGroups", logGroupNamePrefix=name)
    group = next((g for g in groups if g.get("logGroupName") == name), None)
    if group is None:
        return None
    return {"group": group, "tags": dict(logs.list_tags_log_group(logGroupName=name).get("tags") or {})}


# ------------------------------------------------------------- comparisons


def _tag_difference(what, have, want):
    to_set, to_remove = common.tag_diff(have, want)
    if not (to_set or to_remove):
        return []
    return [f"{what}: tags {', '.join(sorted(set(to_set) | set(to_remove)))} differ"]


def role_differences(found, want, trust):
    """Sentences for what an IAM role lacks; ``trust`` is its wanted trust policy with the OIDC placeholders filled in."""
    what = f"IAM role {want['name']}"
    if found is None:
        return [f"{what} does not exist"]
    role = found["role"]
    differences = []
    if trust is None:
        differences.append(f"{what}: its trust policy names an OIDC provider and the cluster has no OIDC issuer")
    elif _canonical(role.get("AssumeRolePolicyDocument")) != _canonical(trust):
        differences.append(f"{what}: trust policy differs")
    if want.get("description") is not None and role.get("Description") != want["description"]:
        differences.append(f"{what}: description differs")
    if found["managed_policies"] != sorted(set(want.get("managed_policies") or [])):
        differences.append(f"{what}: attached managed policies differ")
    differences += _tag_difference(what, _key_value_tags(role.get("Tags")), _string_tags(want.get("tags")))
    return differences


def key_differences(found, want):
    """Sentences for what the KMS key of an alias lacks."""
    what = f"KMS key {want['alias']}"
    if found is None:
        return [f"{what} does not exist"]
    key = found["key"]
    differences = []
    wanted_state = "Enabled" if want.get("enabled", True) else "Disabled"
    if key.get("KeyState") != wanted_state:
        differences.append(f"{what} is {key.get('KeyState')}, not {wanted_state}")
    if want.get("description") is not None and key.get("Description") != want["description"]:
        differences.append(f"{what}: description differs")
    # The rotation of a key that is not enabled cannot be read (its state is the difference then).
    if want.get("enable_key_rotation") is not None and found["rotation"] is not None and found["rotation"] != want["enable_key_rotation"]:
        differences.append(f"{what}: key rotation is not {'on' if want['enable_key_rotation'] else 'off'}")
    # amazon.aws.kms_key's own comparison (order of lists and of keys aside), so in place means it would not call
    # PutKeyPolicy. A policy that cannot be read is a difference: the module runs and says what it can. (Read only
    # on an enabled key: otherwise its state is the difference.)
    if (want.get("policy") is not None and key.get("KeyState") == "Enabled"
            and (found.get("policy") is None or compare_policies(found["policy"], want["policy"]))):
        differences.append(f"{what}: key policy differs")
    differences += _tag_difference(what, found["tags"], _string_tags(want.get("tags")))
    return differences


def log_group_differences(found, want):
    """Sentences for what a CloudWatch log group lacks."""
    what = f"log group {want['name']}"
    if found is None:
        return [f"{what} does not exist"]
    differences = []
    if want.get("retention") is not None and found["group"].get("retentionInDays") != want["retention"]:
        differences.append(f"{what}: retention is {found['group'].get('retentionInDays')} days, not {want['retention']}")
    differences += _tag_difference(what, found["tags"], _string_tags(want.get("tags")))
    return differences


def addon_differences(found, want, role_arn):
    """Sentences for what an EKS add-on lacks, as trainium.eks.eks_addon would plan it; ``role_arn``: its wanted
    service account role (None: not compared)."""
    what = f"EKS add-on {want['name']} of cluster {want['cluster_name']}"
    if found is None:
        return [f"{what} does not exist"]
    if found.get("status") != "ACTIVE":
        return [f"{what} is {found.get('status')}, not ACTIVE"]
    try:
        desired = ad.desired_state(dict(want, service_account_role_arn=role_arn))
    except ValueError as e:
        return [f"{what}: configuration_values cannot be read ({e})"]
    plan = ad.plan_changes(found, desired)
    differences = [f"{what}: {label} differs" for key, label in ADDON_FIELDS.items() if key in (plan["update"] or {})]
    if plan["tags_to_set"] or plan["tags_to_remove"]:
        differences.append(f"{what}: tags {', '.join(sorted(set(plan['tags_to_set']) | set(plan['tags_to_remove'])))} differ")
    if plan["changed"] and not differences:
        # A field the planner compares and ADDON_FIELDS does not name yet: still a difference.
        differences.append(f"{what} differs from what eks_addon would make of it")
    return differences


def read_account_resources(clients, params):
    """What the module returns: differences, and per resource its ARN (or key ID) and whether it is in place.

    ``clients`` maps "iam", "kms", "logs" and "eks" to a boto3 client each
    (called lazily: a function of the service name).
    """
    differences = []
    result = {"iam_roles": {}, "kms_keys": {}, "log_groups": {}, "eks_addons": {}, "oidc_provider_arn": None}
    provider_arn = host = None
    if params.get("oidc_cluster_name"):
        provider_arn, host = read_oidc(clients("eks"), params["oidc_cluster_name"])
        result["oidc_provider_arn"] = provider_arn
    for want in params.get("iam_roles") or []:
        found = read_role(clients("iam"), want["name"])
        trust = fill_oidc(want["assume_role_policy_document"], provider_arn, host)
        found_differences = role_differences(found, want, trust)
        result["iam_roles"][want["name"]] = {"arn": found["role"]["Arn"] if found else None, "in_place": not found_differences}
        differences += found_differences
    for want in params.get("kms_keys") or []:
        found = read_key(clients("kms"), want["alias"], policy=want.get("policy") is not None)
        found_differences = key_differences(found, want)
        result["kms_keys"][want["alias"]] = {"key_arn": found["key"].get("Arn") if found else None,
                                             "key_id": found["key"].get("KeyId") if found else None,
                                             "in_place": not found_differences}
        differences += found_differences
    for want in params.get("log_groups") or []:
        found = read_log_group(clients("logs"), want["name"])
        found_differences = log_group_differences(found, want)
        result["log_groups"][want["name"]] = {"arn": found["group"].get("arn") if found else None, "in_place": not found_differences}
        differences += found_differences
    for want in params.get("eks_addons") or []:
        role_arn = want.get("service_account_role_arn")
        if want.get("service_account_role"):
            role = result["iam_roles"].get(want["service_account_role"]) or {}
            # The add-on waits for its role: not in place while the role is not.
            role_arn = role.get("arn") if role.get("in_place") else None
        found = ad.describe_addon(clients("eks"), want["cluster_name"], want["name"])
        if want.get("service_account_role") and role_arn is None:
            found_differences = [f"EKS add-on {want['name']} of cluster {want['cluster_name']}: "
                                 f"its service account role {want['service_account_role']} is not in place"]
        else:
            found_differences = addon_differences(found, want, role_arn)
        result["eks_addons"][want["name"]] = {"arn": (found or {}).get("addonArn"), "status": (found or {}).get("status"),
                                              "in_place": not found_differences}
        differences += found_differences
    result.update(in_place=not differences, differences=differences)
    return result
