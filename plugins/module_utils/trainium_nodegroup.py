# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""EKS managed node group logic behind trainium.eks.eks_nodegroup.

Two halves:

* plain functions that decide what to do (``validate_params``,
  ``desired_state``, ``plan_changes``, ...) from the module's parameters and
  the node group as DescribeNodegroup reports it; they never call AWS, so unit
  tests cover them directly;
* boto3 calls, each retried with jittered backoff and turning botocore errors
  into ``TrainiumNodegroupError`` (an ``AnsibleAWSError``).

Only what the user asked for is compared: a parameter left unset never causes
an update, so defaults that EKS (or moto) fills in by itself - remote access,
AMI type, Kubernetes version, update config - are left alone.
"""

from __future__ import annotations

import copy

from ansible.module_utils.common.dict_transformations import camel_dict_to_snake_dict

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import TAINT_EFFECT_CHOICES

# Every AMIType of the EKS API (botocore 1.40 model).
AMI_TYPES = (
    "AL2_x86_64", "AL2_x86_64_GPU", "AL2_ARM_64", "CUSTOM",
    "BOTTLEROCKET_ARM_64", "BOTTLEROCKET_x86_64", "BOTTLEROCKET_ARM_64_FIPS", "BOTTLEROCKET_x86_64_FIPS",
    "BOTTLEROCKET_ARM_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA", "BOTTLEROCKET_ARM_64_NVIDIA_FIPS", "BOTTLEROCKET_x86_64_NVIDIA_FIPS",
    "WINDOWS_CORE_2019_x86_64", "WINDOWS_FULL_2019_x86_64", "WINDOWS_CORE_2022_x86_64", "WINDOWS_FULL_2022_x86_64",
    "WINDOWS_CORE_2025_x86_64", "WINDOWS_FULL_2025_x86_64",
    "AL2023_x86_64_STANDARD", "AL2023_ARM_64_STANDARD", "AL2023_x86_64_NEURON", "AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA",
)

# States in which EKS refuses DeleteNodegroup (ResourceInUseException).
BUSY_STATES = ("CREATING", "UPDATING")
FAILED_STATES = ("CREATE_FAILED", "DEGRADED", "DELETE_FAILED")


class TrainiumNodegroupError(common.TrainiumAWSError):
    pass


NodegroupErrorHandler = common.error_handler(TrainiumNodegroupError, "ResourceNotFoundException")


# --------------------------------------------------------------------------
# Pure decisions
# --------------------------------------------------------------------------

def normalize_taints(taints):
    """Taints in the EKS shape ``{key, value?, effect}``, effects converted, no empty value."""
    result = []
    for taint in taints or []:
        item = {"key": taint["key"], "effect": common.eks_taint_effect(taint["effect"])}
        if taint.get("value") not in (None, ""):
            item["value"] = str(taint["value"])
        result.append(item)
    return result


def validate_params(params):
    """Problems with the parameters that need no AWS call; each names the option, the value and what is allowed."""
    errors = []
    scaling = params.get("scaling_config") or {}
    sizes = {k: scaling.get(k) for k in ("min_size", "max_size", "desired_size")}
    for key, value in sizes.items():
        if value is not None and value < 0:
            errors.append(f"scaling_config.{key}: got {value}; allowed: an integer of 0 or more")
    errors.extend(scaling_errors(sizes, "scaling_config"))
    update = params.get("update_config") or {}
    if update.get("max_unavailable") is not None and update.get("max_unavailable_percentage") is not None:
        errors.append("update_config: got both max_unavailable and max_unavailable_percentage; allowed: one of them")
    if update.get("max_unavailable") is not None and update["max_unavailable"] < 1:
        errors.append(f"update_config.max_unavailable: got {update['max_unavailable']}; allowed: an integer of 1 or more")
    percentage = update.get("max_unavailable_percentage")
    if percentage is not None and not 1 <= percentage <= 100:
        errors.append(f"update_config.max_unavailable_percentage: got {percentage}; allowed: an integer from 1 to 100")
    template = params.get("launch_template")
    if template is not None:
        if not template.get("id") and not template.get("name"):
            errors.append("launch_template: got neither id nor name; allowed: one of launch_template.id or launch_template.name")
        if template.get("id") and template.get("name"):
            errors.append("launch_template: got both id and name; allowed: one of them")
    for index, taint in enumerate(params.get("taints") or []):
        if not taint.get("key"):
            errors.append(f"taints[{index}].key: got {taint.get('key')!r}; allowed: a non-empty taint key")
        if taint.get("effect") not in TAINT_EFFECT_CHOICES:
            errors.append(f"taints[{index}].effect: got {taint.get('effect')!r}; allowed: {', '.join(TAINT_EFFECT_CHOICES)}")
    if params.get("subnets") is not None and not params["subnets"]:
        errors.append("subnets: got an empty list; allowed: one or more subnet IDs")
    if params.get("instance_types") is not None and not params["instance_types"]:
        errors.append("instance_types: got an empty list; allowed: one or more instance types, or leave it unset")
    return errors


def scaling_errors(sizes, where):
    """Check min <= desired <= max and max >= 1 on the sizes that are known (None = unknown)."""
    errors = []
    low, high, desired = sizes.get("min_size"), sizes.get("max_size"), sizes.get("desired_size")
    if high is not None and high < 1:
        errors.append(f"{where}.max_size: got {high}; allowed: an integer of 1 or more")
    if low is not None and high is not None and low > high:
        errors.append(f"{where}.min_size: got {low}, more than max_size {high}; allowed: min_size <= desired_size <= max_size")
    if desired is not None and low is not None and desired < low:
        errors.append(f"{where}.desired_size: got {desired}, less than min_size {low}; allowed: min_size <= desired_size <= max_size")
    if desired is not None and high is not None and desired > high:
        errors.append(f"{where}.desired_size: got {desired}, more than max_size {high}; allowed: min_size <= desired_size <= max_size")
    return errors


def _drop_none(data):
    return {k: v for k, v in data.items() if v is not None}


# option: CreateNodegroup key, for the options passed on as they are (unset or empty: absent)
_SCALAR_OPTIONS = {"node_role_arn": "nodeRole", "ami_type": "amiType", "capacity_type": "capacityType", "release_version": "releaseVersion"}
# the same for list options (an empty list is kept: validate_params refuses it)
_LIST_OPTIONS = {"subnets": "subnets", "instance_types": "instanceTypes"}
# the same for dict options: option: (key, {suboption: field}); suboptions left unset are absent
_DICT_OPTIONS = {
    "scaling_config": ("scalingConfig", {"min_size": "minSize", "max_size": "maxSize", "desired_size": "desiredSize"}),
    "update_config": ("updateConfig", {"max_unavailable": "maxUnavailable", "max_unavailable_percentage": "maxUnavailablePercentage"}),
}


def desired_state(params):
    """What the user asked for, in EKS API shape; options left unset are absent."""
    desired = {key: params[option] for option, key in _SCALAR_OPTIONS.items() if params.get(option)}
    desired.update({key: list(params[option]) for option, key in _LIST_OPTIONS.items() if params.get(option) is not None})
    template = params.get("launch_template")
    if template:
        lt = _drop_none({"id": template.get("id"), "name": template.get("name")})
        if template.get("version") not in (None, ""):
            lt["version"] = str(template["version"])
        desired["launchTemplate"] = lt
    for option, (key, fields) in _DICT_OPTIONS.items():
        values = _drop_none({field: (params.get(option) or {}).get(suboption) for suboption, field in fields.items()})
        if values:
            desired[key] = values
    if params.get("labels") is not None:
        desired["labels"] = {str(k): str(v) for k, v in params["labels"].items()}
    if params.get("taints") is not None:
        desired["taints"] = normalize_taints(params["taints"])
    if params.get("tags") is not None:
        desired["tags"] = {str(k): str(v) for k, v in params["tags"].items()}
    return desired


def create_request(cluster_name, name, desired):
    """Keyword arguments of CreateNodegroup for a new node group."""
    request = {"clusterName": cluster_name, "nodegroupName": name}
    for key in ("nodeRole", "subnets", "amiType", "capacityType", "instanceTypes", "releaseVersion",
                "launchTemplate", "scalingConfig", "updateConfig", "labels", "taints", "tags"):
        if key in desired:
            request[key] = copy.deepcopy(desired[key])
    return request


def creation_errors(desired):
    """What a new node group needs that the parameters lack."""
    missing = [option for option, key in (("node_role_arn", "nodeRole"), ("subnets", "subnets")) if key not in desired]
    if missing:
        return [f"{', '.join(missing)}: not set; allowed: required to create a node group that does not exist yet"]
    return []


def immutable_differences(current, desired):
    """Differences that EKS cannot update in place, as readable strings (empty when none)."""
    found = []

    def differs(label, have, want):
        found.append(f"{label}: is {have!r}, asked {want!r}")

    if "nodeRole" in desired and desired["nodeRole"] != current.get("nodeRole"):
        differs("node_role_arn", current.get("nodeRole"), desired["nodeRole"])
    if "subnets" in desired and sorted(desired["subnets"]) != sorted(current.get("subnets") or []):
        differs("subnets", sorted(current.get("subnets") or []), sorted(desired["subnets"]))
    if "amiType" in desired and desired["amiType"] != current.get("amiType"):
        differs("ami_type", current.get("amiType"), desired["amiType"])
    if "capacityType" in desired and desired["capacityType"] != current.get("capacityType"):
        differs("capacity_type", current.get("capacityType"), desired["capacityType"])
    if "instanceTypes" in desired and sorted(desired["instanceTypes"]) != sorted(current.get("instanceTypes") or []):
        differs("instance_types", current.get("instanceTypes"), desired["instanceTypes"])
    wanted_lt = desired.get("launchTemplate")
    if wanted_lt:
        have_lt = current.get("launchTemplate") or {}
        if not have_lt:
            differs("launch_template", None, {k: v for k, v in wanted_lt.items() if k != "version"})
        for key in ("id", "name"):
            if have_lt and key in wanted_lt and wanted_lt[key] != have_lt.get(key):
                differs(f"launch_template.{key}", have_lt.get(key), wanted_lt[key])
    return found


def label_changes(current, wanted):
    """(addOrUpdateLabels, removeLabels) turning the labels ``current`` into ``wanted``."""
    current = current or {}
    add = {k: v for k, v in wanted.items() if current.get(k) != v}
    remove = sorted(k for k in current if k not in wanted)
    return add, remove


def _taint_key(taint):
    return (taint["key"], taint["effect"])


def taint_changes(current, wanted):
    """(addOrUpdateTaints, removeTaints); a taint is identified by key and effect, as in Kubernetes."""
    have = {_taint_key(t): t for t in current or []}
    want = {_taint_key(t): t for t in wanted}
    add = [t for k, t in want.items() if k not in have or have[k].get("value") != t.get("value")]
    remove = [have[k] for k in have if k not in want]
    return add, remove


def config_update_request(current, desired):
    """Keyword arguments of UpdateNodegroupConfig, or None when nothing it covers differs."""
    request = {}
    if "scalingConfig" in desired:
        have = current.get("scalingConfig") or {}
        if any(have.get(k) != v for k, v in desired["scalingConfig"].items()):
            merged = dict(have)
            merged.update(desired["scalingConfig"])
            request["scalingConfig"] = {k: merged[k] for k in ("minSize", "maxSize", "desiredSize") if k in merged}
    if "labels" in desired:
        add, remove = label_changes(current.get("labels"), desired["labels"])
        if add or remove:
            request["labels"] = _drop_none({"addOrUpdateLabels": add or None, "removeLabels": remove or None})
    if "taints" in desired:
        add, remove = taint_changes(current.get("taints"), desired["taints"])
        if add or remove:
            request["taints"] = _drop_none({"addOrUpdateTaints": add or None, "removeTaints": remove or None})
    if "updateConfig" in desired:
        have = current.get("updateConfig") or {}
        if any(have.get(k) != v for k, v in desired["updateConfig"].items()):
            request["updateConfig"] = dict(desired["updateConfig"])
    if not request:
        return None
    request["clusterName"] = current["clusterName"]
    request["nodegroupName"] = current["nodegroupName"]
    return request


def version_update_request(current, desired):
    """Keyword arguments of UpdateNodegroupVersion, or None when the launch template version and release agree."""
    request = {}
    wanted_lt = desired.get("launchTemplate") or {}
    have_lt = current.get("launchTemplate") or {}
    if have_lt and "version" in wanted_lt and str(have_lt.get("version")) != wanted_lt["version"]:
        reference = {"id": have_lt["id"]} if have_lt.get("id") else {"name": have_lt["name"]}
        reference["version"] = wanted_lt["version"]
        request["launchTemplate"] = reference
    if "releaseVersion" in desired and desired["releaseVersion"] != current.get("releaseVersion"):
        request["releaseVersion"] = desired["releaseVersion"]
    if not request:
        return None
    request["clusterName"] = current["clusterName"]
    request["nodegroupName"] = current["nodegroupName"]
    return request


def plan_changes(current, desired, purge_tags=True):
    """Everything to do to an existing node group, in the shape of ``trainium_common.new_plan``:
    ``errors`` (immutable differences, impossible sizes), ``config`` and ``version`` (request kwargs
    or None), ``tags_to_set``, ``tags_to_remove`` and ``changed``."""
    errors = immutable_differences(current, desired)
    config = config_update_request(current, desired)
    if config and "scalingConfig" in config:
        sizes = config["scalingConfig"]
        errors.extend(scaling_errors(
            {"min_size": sizes.get("minSize"), "max_size": sizes.get("maxSize"), "desired_size": sizes.get("desiredSize")},
            "scaling_config (with the node group's current sizes)",
        ))
    tags = common.tag_diff(current.get("tags"), desired.get("tags"), purge_tags)
    return common.new_plan(errors, tags, config=config, version=version_update_request(current, desired))


def block_version_update(current, plan):
    """Whether ``plan`` updates the version of a node group on a Capacity Block (done at desired size 0, see update_steps)."""
    return bool(plan.get("version")) and current.get("capacityType") == "CAPACITY_BLOCK"


def update_steps(current, desired, plan):
    """The updates of ``plan`` in the order EKS takes them, one at a time: ``[(kind, request)]`` with kind
    ``config`` (UpdateNodegroupConfig) or ``version`` (UpdateNodegroupVersion).

    A node group on a Capacity Block takes a version update only at desired size 0 ("When upgrading managed
    node groups with Capacity Blocks, make sure that the desired size of the node group is set to 0", Amazon
    EKS User Guide, "Create a managed node group with Capacity Blocks for ML"): it is scaled to 0 first, then
    updated, then given its sizes (and any other configuration change) back."""
    config, version = plan.get("config"), plan.get("version")
    if not block_version_update(current, plan):
        return [(kind, request) for kind, request in (("config", config), ("version", version)) if request]
    # The version first, at 0, whatever the configuration asks: a run interrupted after the scale-down finds
    # the group at 0 and must not scale it up before the version update EKS would then refuse.
    have = current.get("scalingConfig") or {}
    zero = {"minSize": 0, "maxSize": have.get("maxSize"), "desiredSize": 0}
    down = [] if int(have.get("desiredSize") or 0) == 0 else [
        ("config", {"clusterName": current["clusterName"], "nodegroupName": current["nodegroupName"], "scalingConfig": zero})]
    sizes = {k: v for k, v in have.items() if k in ("minSize", "maxSize", "desiredSize")}
    sizes.update(desired.get("scalingConfig") or {})
    restore = config_update_request(dict(current, scalingConfig=zero), dict(desired, scalingConfig=sizes))
    return down + [("version", version)] + ([("config", restore)] if restore else [])


def predict(current, plan):
    """The node group as it would look once ``plan`` is applied (for check mode and diffs)."""
    after = copy.deepcopy(current)
    config = plan.get("config") or {}
    if "scalingConfig" in config:
        after["scalingConfig"] = dict(config["scalingConfig"])
    if "labels" in config:
        labels = dict(after.get("labels") or {})
        for key in config["labels"].get("removeLabels", []):
            labels.pop(key, None)
        labels.update(config["labels"].get("addOrUpdateLabels", {}))
        after["labels"] = labels
    if "taints" in config:
        removed = {_taint_key(t) for t in config["taints"].get("removeTaints", [])}
        added = config["taints"].get("addOrUpdateTaints", [])
        replaced = {_taint_key(t) for t in added}
        after["taints"] = [t for t in after.get("taints") or [] if _taint_key(t) not in removed | replaced] + list(added)
    if "updateConfig" in config:
        after["updateConfig"] = dict(config["updateConfig"])
    version = plan.get("version") or {}
    if "launchTemplate" in version:
        after["launchTemplate"] = dict(after.get("launchTemplate") or {}, version=version["launchTemplate"]["version"])
    if "releaseVersion" in version:
        after["releaseVersion"] = version["releaseVersion"]
    if plan.get("tags_to_set") or plan.get("tags_to_remove"):
        after["tags"] = common.tags_after(after.get("tags"), plan.get("tags_to_set", {}), plan.get("tags_to_remove", []))
    return after


def predict_new(request):
    """A node group as CreateNodegroup would start it (check mode)."""
    nodegroup = {k: copy.deepcopy(v) for k, v in request.items() if k != "clientRequestToken"}
    nodegroup["status"] = "CREATING"
    return nodegroup


def summarize(nodegroup):
    """The node group in snake case for the module's result; labels and tags keep their keys."""
    if not nodegroup:
        return {}
    keep = {k: v for k, v in nodegroup.items() if k != "ResponseMetadata"}
    result = camel_dict_to_snake_dict(keep, ignore_list=["labels", "tags"])
    result["name"] = result.pop("nodegroup_name", None)
    result["arn"] = result.pop("nodegroup_arn", None)
    for key in ("created_at", "modified_at"):
        if key in result and not isinstance(result[key], str):
            result[key] = result[key].isoformat()
    return result


def health_message(nodegroup):
    issues = (nodegroup.get("health") or {}).get("issues") or []
    if not issues:
        return "no health issues reported"
    return "; ".join(f"{i.get('code')}: {i.get('message')} ({', '.join(i.get('resourceIds') or [])})" for i in issues)


# --------------------------------------------------------------------------
# AWS calls
# --------------------------------------------------------------------------

@NodegroupErrorHandler.list_error_handler("describe the EKS cluster")
@AWSRetry.jittered_backoff()
def describe_cluster(client, cluster_name):
    return client.describe_cluster(name=cluster_name)["cluster"]


@NodegroupErrorHandler.list_error_handler("describe the node group")
@AWSRetry.jittered_backoff()
def describe_nodegroup(client, cluster_name, name):
    return client.describe_nodegroup(clusterName=cluster_name, nodegroupName=name)["nodegroup"]


@NodegroupErrorHandler.list_error_handler("list the node groups", default_value=[])
@AWSRetry.jittered_backoff()
def list_nodegroups(client, cluster_name):
    return common.all_items(client, "list_nodegroups", "nodegroups", clusterName=cluster_name)


@NodegroupErrorHandler.common_error_handler("create the node group")
def create_nodegroup(client, request, timeout=common.ROLE_PROPAGATION_SECONDS, clock=None, sleep=None):
    """CreateNodegroup, tried again within ``timeout`` seconds while the node role cannot be assumed yet (a role made
    moments ago on a new account: IAM is eventually consistent); throttling retried with backoff."""
    return common.retry_in_use(lambda: client.create_nodegroup(**request), timeout, in_use=common.is_role_propagation_error,
                               clock=clock, sleep=sleep)["nodegroup"]


@NodegroupErrorHandler.common_error_handler("update the node group configuration")
def update_nodegroup_config(client, request, timeout=None):
    """UpdateNodegroupConfig; refused while another update runs (ResourceInUseException), retried within ``timeout`` seconds."""
    return common.retry_in_use(lambda: client.update_nodegroup_config(**request), timeout)["update"]


@NodegroupErrorHandler.common_error_handler("update the node group version (launch template version or release)")
def update_nodegroup_version(client, request, timeout=None):
    """UpdateNodegroupVersion; an update in progress is retried like ``update_nodegroup_config``."""
    return common.retry_in_use(lambda: client.update_nodegroup_version(**request), timeout)["update"]


@NodegroupErrorHandler.deletion_error_handler("delete the node group")
def delete_nodegroup(client, cluster_name, name, timeout=None, clock=None, sleep=None):
    """DeleteNodegroup; ResourceInUseException (node group still CREATING/UPDATING) is retried with backoff within ``timeout`` seconds."""
    common.retry_in_use(lambda: client.delete_nodegroup(clusterName=cluster_name, nodegroupName=name), timeout, clock=clock, sleep=sleep)
    return True


def wait_until_settled(client, cluster_name, name, timeout, delay=15, sleep=None, clock=None):
    """Poll while the node group is CREATING or UPDATING (EKS refuses to delete it then).

    Returns the last description, None when it is gone; any other status
    (ACTIVE, CREATE_FAILED, DEGRADED, DELETING...) ends the wait. Raises
    TrainiumNodegroupError when ``timeout`` passes first.
    """
    return common.wait_until_settled(lambda: describe_nodegroup(client, cluster_name, name), BUSY_STATES, timeout,
                                     f"node group {name} of cluster {cluster_name}", delay=delay, error=TrainiumNodegroupError,
                                     clock=clock, sleep=sleep)


def wait_for_nodegroup(client, cluster_name, name, gone=False, timeout=1200, delay=15, sleep=None, clock=None):
    """Poll until the node group is ACTIVE (or gone when ``gone``); raise TrainiumNodegroupError on
    a failed state or timeout. Returns the last description (None when gone)."""
    return common.wait_for_status(lambda: describe_nodegroup(client, cluster_name, name), "ACTIVE", timeout,
                                  f"node group {name} of cluster {cluster_name}", gone=gone,
                                  failed=("DELETE_FAILED",) if gone else FAILED_STATES, reason=health_message,
                                  delay=delay, error=TrainiumNodegroupError, clock=clock, sleep=sleep)
