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
import time

from ansible.module_utils.common.dict_transformations import camel_dict_to_snake_dict

from ansible_collections.amazon.aws.plugins.module_utils.botocore import is_boto3_error_code
from ansible_collections.amazon.aws.plugins.module_utils.errors import AWSErrorHandler
from ansible_collections.amazon.aws.plugins.module_utils.exceptions import AnsibleAWSError
from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils.trainium_eks import in_use_retries

# Every AMIType of the EKS API (botocore 1.40 model).
AMI_TYPES = (
    "AL2_x86_64", "AL2_x86_64_GPU", "AL2_ARM_64", "CUSTOM",
    "BOTTLEROCKET_ARM_64", "BOTTLEROCKET_x86_64", "BOTTLEROCKET_ARM_64_FIPS", "BOTTLEROCKET_x86_64_FIPS",
    "BOTTLEROCKET_ARM_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA", "BOTTLEROCKET_ARM_64_NVIDIA_FIPS", "BOTTLEROCKET_x86_64_NVIDIA_FIPS",
    "WINDOWS_CORE_2019_x86_64", "WINDOWS_FULL_2019_x86_64", "WINDOWS_CORE_2022_x86_64", "WINDOWS_FULL_2022_x86_64",
    "WINDOWS_CORE_2025_x86_64", "WINDOWS_FULL_2025_x86_64",
    "AL2023_x86_64_STANDARD", "AL2023_ARM_64_STANDARD", "AL2023_x86_64_NEURON", "AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA",
)
CAPACITY_TYPES = ("ON_DEMAND", "SPOT", "CAPACITY_BLOCK")
TAINT_EFFECTS = ("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE")
# Kubernetes spells the effects in CamelCase; EKS in upper snake case.
KUBERNETES_TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
TAINT_EFFECT_CHOICES = TAINT_EFFECTS + tuple(KUBERNETES_TAINT_EFFECTS)

BUSY_STATES = ("CREATING", "UPDATING", "DELETING")
# States in which EKS refuses DeleteNodegroup (ResourceInUseException).
SETTLING_STATES = ("CREATING", "UPDATING")
FAILED_STATES = ("CREATE_FAILED", "DEGRADED", "DELETE_FAILED")


class TrainiumNodegroupError(AnsibleAWSError):
    pass


class NodegroupErrorHandler(AWSErrorHandler):
    _CUSTOM_EXCEPTION = TrainiumNodegroupError

    @classmethod
    def _is_missing(cls):
        return is_boto3_error_code("ResourceNotFoundException")


# --------------------------------------------------------------------------
# Pure decisions
# --------------------------------------------------------------------------

def taint_effect(effect):
    """The EKS spelling of a taint effect given in either spelling; ValueError otherwise."""
    if effect in TAINT_EFFECTS:
        return effect
    if effect in KUBERNETES_TAINT_EFFECTS:
        return KUBERNETES_TAINT_EFFECTS[effect]
    raise ValueError(effect)


def normalize_taints(taints):
    """Taints in the EKS shape ``{key, value?, effect}``, effects converted, no empty value."""
    result = []
    for taint in taints or []:
        item = {"key": taint["key"], "effect": taint_effect(taint["effect"])}
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


def desired_state(params):
    """What the user asked for, in EKS API shape; options left unset are absent."""
    desired = {}
    if params.get("node_role_arn"):
        desired["nodeRole"] = params["node_role_arn"]
    if params.get("subnets") is not None:
        desired["subnets"] = list(params["subnets"])
    if params.get("ami_type"):
        desired["amiType"] = params["ami_type"]
    if params.get("capacity_type"):
        desired["capacityType"] = params["capacity_type"]
    if params.get("instance_types") is not None:
        desired["instanceTypes"] = list(params["instance_types"])
    if params.get("release_version"):
        desired["releaseVersion"] = params["release_version"]
    template = params.get("launch_template")
    if template:
        lt = _drop_none({"id": template.get("id"), "name": template.get("name")})
        if template.get("version") not in (None, ""):
            lt["version"] = str(template["version"])
        desired["launchTemplate"] = lt
    scaling = params.get("scaling_config")
    if scaling:
        sizes = _drop_none({
            "minSize": scaling.get("min_size"),
            "maxSize": scaling.get("max_size"),
            "desiredSize": scaling.get("desired_size"),
        })
        if sizes:
            desired["scalingConfig"] = sizes
    update = params.get("update_config")
    if update:
        config = _drop_none({
            "maxUnavailable": update.get("max_unavailable"),
            "maxUnavailablePercentage": update.get("max_unavailable_percentage"),
        })
        if config:
            desired["updateConfig"] = config
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


def tag_changes(current, wanted, purge):
    """(tags to set, keys to remove) turning ``current`` into ``wanted``; None ``wanted`` changes nothing."""
    if wanted is None:
        return {}, []
    current = current or {}
    add = {k: v for k, v in wanted.items() if current.get(k) != v}
    remove = sorted(k for k in current if k not in wanted and not k.startswith("aws:")) if purge else []
    return add, remove


def plan_changes(current, desired, purge_tags=True):
    """Everything to do to an existing node group: a dict with ``errors`` (immutable differences),
    ``config`` and ``version`` (request kwargs or None) and ``tags`` ((add, remove))."""
    plan = {
        "errors": immutable_differences(current, desired),
        "config": config_update_request(current, desired),
        "version": version_update_request(current, desired),
        "tags": tag_changes(current.get("tags"), desired.get("tags"), purge_tags),
    }
    if plan["config"] and "scalingConfig" in plan["config"]:
        sizes = plan["config"]["scalingConfig"]
        plan["errors"].extend(scaling_errors(
            {"min_size": sizes.get("minSize"), "max_size": sizes.get("maxSize"), "desired_size": sizes.get("desiredSize")},
            "scaling_config (with the node group's current sizes)",
        ))
    plan["changed"] = bool(plan["config"] or plan["version"] or plan["tags"][0] or plan["tags"][1])
    return plan


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
    add, remove = plan.get("tags", ({}, []))
    if add or remove:
        tags = {k: v for k, v in (after.get("tags") or {}).items() if k not in remove}
        tags.update(add)
        after["tags"] = tags
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
    paginator = client.get_paginator("list_nodegroups")
    return paginator.paginate(clusterName=cluster_name).build_full_result().get("nodegroups", [])


@NodegroupErrorHandler.common_error_handler("create the node group")
@AWSRetry.jittered_backoff()
def create_nodegroup(client, request):
    return client.create_nodegroup(**request)["nodegroup"]


@NodegroupErrorHandler.common_error_handler("update the node group configuration")
@AWSRetry.jittered_backoff()
def update_nodegroup_config(client, request):
    return client.update_nodegroup_config(**request)["update"]


@NodegroupErrorHandler.common_error_handler("update the node group version (launch template version or release)")
@AWSRetry.jittered_backoff()
def update_nodegroup_version(client, request):
    return client.update_nodegroup_version(**request)["update"]


@NodegroupErrorHandler.common_error_handler("tag the node group")
@AWSRetry.jittered_backoff()
def tag_nodegroup(client, arn, tags):
    client.tag_resource(resourceArn=arn, tags=tags)


@NodegroupErrorHandler.common_error_handler("untag the node group")
@AWSRetry.jittered_backoff()
def untag_nodegroup(client, arn, keys):
    client.untag_resource(resourceArn=arn, tagKeys=keys)


@NodegroupErrorHandler.deletion_error_handler("delete the node group")
def delete_nodegroup(client, cluster_name, name, timeout=None):
    """DeleteNodegroup; ResourceInUseException (node group still CREATING/UPDATING) is retried with backoff within ``timeout`` seconds."""
    retry = AWSRetry.jittered_backoff(retries=in_use_retries(timeout), delay=5, max_delay=30, catch_extra_error_codes=["ResourceInUseException"])
    retry(lambda: client.delete_nodegroup(clusterName=cluster_name, nodegroupName=name))()
    return True


def wait_until_settled(client, cluster_name, name, timeout, delay=15, sleep=None, clock=None):
    """Poll while the node group is CREATING or UPDATING (EKS refuses to delete it then).

    Returns the last description, None when it is gone; any other status
    (ACTIVE, CREATE_FAILED, DEGRADED, DELETING...) ends the wait. Raises
    TrainiumNodegroupError when ``timeout`` passes first.
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    deadline = clock() + timeout
    while True:
        nodegroup = describe_nodegroup(client, cluster_name, name)
        if nodegroup is None or nodegroup.get("status") not in SETTLING_STATES:
            return nodegroup
        if clock() >= deadline:
            raise TrainiumNodegroupError(
                message=f"timed out after {timeout}s waiting for node group {name} of cluster {cluster_name} to finish {nodegroup['status']} "
                        "before deleting it (EKS refuses to delete a node group that is being created or updated)"
            )
        sleep(delay)


def wait_for_nodegroup(client, cluster_name, name, gone=False, timeout=1200, delay=15, sleep=time.sleep, clock=time.monotonic):
    """Poll until the node group is ACTIVE (or gone when ``gone``); raise TrainiumNodegroupError on
    a failed state or timeout. Returns the last description (None when gone)."""
    deadline = clock() + timeout
    while True:
        nodegroup = describe_nodegroup(client, cluster_name, name)
        if gone and nodegroup is None:
            return None
        if nodegroup is None:
            raise TrainiumNodegroupError(message=f"node group {name} of cluster {cluster_name} disappeared while waiting for it to become ACTIVE")
        status = nodegroup.get("status")
        if not gone and status == "ACTIVE":
            return nodegroup
        if status == "DELETE_FAILED" or (not gone and status in FAILED_STATES):
            raise TrainiumNodegroupError(message=f"node group {name} of cluster {cluster_name} is {status}: {health_message(nodegroup)}")
        if clock() >= deadline:
            target = "to be deleted" if gone else "to become ACTIVE"
            raise TrainiumNodegroupError(
                message=f"timed out after {timeout}s waiting for node group {name} of cluster {cluster_name} {target}; status {status}"
            )
        sleep(delay)
