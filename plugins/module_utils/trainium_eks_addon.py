# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""EKS managed add-on logic behind trainium.eks.eks_addon.

Two halves, as in ``trainium_nodegroup``:

* plain functions that decide what to do (``validate_params``,
  ``desired_state``, ``offered_versions``, ``plan_changes``, ``predict``...)
  from the module's parameters, the add-on as DescribeAddon reports it and the
  catalogue DescribeAddonVersions answers; they never call AWS, so unit tests
  cover them directly;
* boto3 calls, each retried with jittered backoff and turning botocore errors
  into ``TrainiumAddonError`` (an ``AnsibleAWSError``).

Only what the user asked for is compared: an option left unset never causes
an update. ``configurationValues`` is compared as data (EKS keeps the JSON or
YAML text as it was sent).
"""

from __future__ import annotations

import copy
import json
import re

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core
    yaml = None

from ansible.module_utils.common.dict_transformations import camel_dict_to_snake_dict

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common

# What resolveConflicts takes (UpdateAddon: all three; CreateAddon: see create_request).
RESOLVE_CONFLICTS = ("OVERWRITE", "NONE", "PRESERVE")
# States in which EKS refuses UpdateAddon (ResourceInUseException).
BUSY_STATES = ("CREATING", "UPDATING")
# States an add-on does not leave by itself while it should become ACTIVE.
FAILED_STATES = ("CREATE_FAILED", "UPDATE_FAILED")
# Unhealthy but running: reported, and updated like an ACTIVE add-on.
UNHEALTHY_STATES = ("DEGRADED", "UPDATE_FAILED")
# The ARN of an IAM role, as EKS accepts it for serviceAccountRoleArn.
ROLE_ARN_RE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")


class TrainiumAddonError(common.TrainiumAWSError):
    pass


AddonErrorHandler = common.error_handler(TrainiumAddonError, "ResourceNotFoundException")


# --------------------------------------------------------------------------
# Pure decisions
# --------------------------------------------------------------------------

def parse_configuration(values):
    """``configuration_values`` (or an add-on's configurationValues) as data.

    None stays None (not compared); an empty string or mapping is ``{}`` (no
    configuration); a string is read as JSON, then as YAML (EKS takes both).
    Raises ValueError when the text is neither or is not a mapping.
    """
    if values is None:
        return None
    if isinstance(values, dict):
        return copy.deepcopy(values)
    if not isinstance(values, str):
        raise ValueError(f"a {type(values).__name__}")
    if not values.strip():
        return {}
    try:
        data = json.loads(values)
    except ValueError:
        data = None
        if yaml is not None:
            try:
                data = yaml.safe_load(values)
            except yaml.YAMLError:
                data = None
        if data is None:
            raise ValueError("text that is neither JSON nor YAML") from None
    if not isinstance(data, dict):
        raise ValueError(f"text that holds a {type(data).__name__}, not a mapping")
    return data


def configuration_text(values):
    """The configurationValues string EKS is sent for the data ``values`` ("" removes the configuration)."""
    return json.dumps(values, sort_keys=True) if values else ""


def validate_params(params):
    """Problems with the parameters that need no AWS call; each names the option, the value and what is allowed."""
    errors = []
    for option in ("cluster_name", "name"):
        if not params.get(option):
            errors.append(f"{option}: got {params.get(option)!r}; allowed: a non-empty name")
    version = params.get("addon_version")
    if version is not None and not version.strip():
        errors.append(f"addon_version: got {version!r}; allowed: a version EKS offers (for example v1.20.4-eksbuild.2), or leave it unset")
    role = params.get("service_account_role_arn")
    if role is not None and not ROLE_ARN_RE.match(role):
        errors.append(f"service_account_role_arn: got {role!r} ({type(role).__name__}); "
                      "allowed: an IAM role ARN (arn:aws:iam::<account>:role/<name>), or leave it unset "
                      "(EKS cannot take the role off an add-on: delete the add-on and create it again without one)")
    values = params.get("configuration_values")
    try:
        parse_configuration(values)
    except ValueError as e:
        errors.append(f"configuration_values: got {e}; allowed: a mapping, JSON or YAML text of one, or {{}} for none")
    if params.get("resolve_conflicts") not in RESOLVE_CONFLICTS:
        errors.append(f"resolve_conflicts: got {params.get('resolve_conflicts')!r}; allowed: {', '.join(RESOLVE_CONFLICTS)}")
    if params.get("wait_timeout") is not None and params["wait_timeout"] < 0:
        errors.append(f"wait_timeout: got {params['wait_timeout']}; allowed: 0 or more seconds")
    return errors


def desired_state(params):
    """What the user asked for, in EKS API shape; options left unset are absent.

    ``configurationValues`` is data here (``{}`` for none).
    """
    desired = {}
    if params.get("addon_version"):
        desired["addonVersion"] = params["addon_version"].strip()
    if params.get("service_account_role_arn") is not None:
        desired["serviceAccountRoleArn"] = params["service_account_role_arn"]
    values = parse_configuration(params.get("configuration_values"))
    if values is not None:
        desired["configurationValues"] = values
    if params.get("tags") is not None:
        desired["tags"] = {str(k): str(v) for k, v in params["tags"].items()}
    return desired


def _version_key(version):
    """A sort key that orders v1.9.0 before v1.19.0 and eksbuild.2 before eksbuild.10."""
    return tuple(int(number) for number in re.findall(r"\d+", version or ""))


def offered_versions(addons, name, kubernetes_version):
    """(versions newest first, default version or None) of add-on ``name`` for ``kubernetes_version``.

    ``addons`` is DescribeAddonVersions' ``addons`` list. A version counts when
    one of its compatibilities names the Kubernetes version; the default is the
    one whose compatibility for it says ``defaultVersion`` (the newest such one
    should AWS ever flag two).
    """
    versions, defaults = set(), set()
    for addon in addons or []:
        if addon.get("addonName") != name:
            continue
        for info in addon.get("addonVersions") or []:
            for compatibility in info.get("compatibilities") or []:
                if compatibility.get("clusterVersion") == kubernetes_version:
                    versions.add(info["addonVersion"])
                    if compatibility.get("defaultVersion"):
                        defaults.add(info["addonVersion"])
    ordered = sorted(versions, key=_version_key, reverse=True)
    default = max(defaults, key=_version_key) if defaults else None
    return ordered, default


def offered_names(addons):
    """Sorted names of the add-ons in a DescribeAddonVersions answer."""
    return sorted({addon.get("addonName") for addon in addons or [] if addon.get("addonName")})


def version_error(name, version, kubernetes_version, versions, default):
    """The message for an addon_version EKS does not offer for the cluster's Kubernetes version."""
    allowed = ", ".join(versions) if versions else "none"
    suffix = f" (default {default})" if default else ""
    return (f"addon_version: got {version!r} (str); allowed: a version EKS offers for add-on {name} on Kubernetes "
            f"{kubernetes_version}: {allowed}{suffix}")


def name_error(name, kubernetes_version, names):
    return (f"name: got {name!r} (str); allowed: an add-on EKS offers for Kubernetes {kubernetes_version}: "
            + (", ".join(names) if names else "none"))


def current_configuration(addon):
    """The add-on's configurationValues as data; the raw text when it parses as neither JSON nor YAML."""
    raw = (addon or {}).get("configurationValues")
    try:
        return parse_configuration(raw) or {}
    except ValueError:
        return raw


def create_request(cluster_name, name, desired, version, resolve_conflicts):
    """Keyword arguments of CreateAddon.

    PRESERVE is sent as NONE: on creation the EKS API reference says PRESERVE
    amounts to NONE, and older EKS API versions accepted only OVERWRITE and NONE there.
    """
    request = {"clusterName": cluster_name, "addonName": name,
               "resolveConflicts": "NONE" if resolve_conflicts == "PRESERVE" else resolve_conflicts}
    if version:
        request["addonVersion"] = version
    if desired.get("serviceAccountRoleArn"):
        request["serviceAccountRoleArn"] = desired["serviceAccountRoleArn"]
    if desired.get("configurationValues"):
        request["configurationValues"] = configuration_text(desired["configurationValues"])
    if desired.get("tags"):
        request["tags"] = dict(desired["tags"])
    return request


def update_request(current, desired, resolve_conflicts):
    """Keyword arguments of one UpdateAddon with only what differs, or None when nothing it covers differs."""
    request = {}
    if "addonVersion" in desired and desired["addonVersion"] != current.get("addonVersion"):
        request["addonVersion"] = desired["addonVersion"]
    if "serviceAccountRoleArn" in desired and desired["serviceAccountRoleArn"] != current.get("serviceAccountRoleArn"):
        request["serviceAccountRoleArn"] = desired["serviceAccountRoleArn"]
    if "configurationValues" in desired and desired["configurationValues"] != current_configuration(current):
        request["configurationValues"] = configuration_text(desired["configurationValues"])
    if not request:
        return None
    request.update(clusterName=current["clusterName"], addonName=current["addonName"], resolveConflicts=resolve_conflicts)
    return request


def plan_changes(current, desired, resolve_conflicts="OVERWRITE", purge_tags=True):
    """Everything to do to an existing add-on, in the shape of ``trainium_common.new_plan``:
    ``update`` (UpdateAddon kwargs or None), ``tags_to_set``, ``tags_to_remove``, ``changed``."""
    tags = common.tag_diff(current.get("tags"), desired.get("tags"), purge_tags)
    return common.new_plan((), tags, update=update_request(current, desired, resolve_conflicts))


def predict(current, plan):
    """The add-on as it would look once ``plan`` is applied (check mode, diffs)."""
    after = copy.deepcopy(current)
    update = plan.get("update") or {}
    if "addonVersion" in update:
        after["addonVersion"] = update["addonVersion"]
    if "serviceAccountRoleArn" in update:
        after["serviceAccountRoleArn"] = update["serviceAccountRoleArn"]
    if "configurationValues" in update:
        if update["configurationValues"]:
            after["configurationValues"] = update["configurationValues"]
        else:
            after.pop("configurationValues", None)
    if update:
        after["status"] = "UPDATING"
    if plan.get("tags_to_set") or plan.get("tags_to_remove"):
        after["tags"] = common.tags_after(after.get("tags"), plan.get("tags_to_set", {}), plan.get("tags_to_remove", []))
    return after


def predict_new(request):
    """An add-on as CreateAddon would start it (check mode)."""
    addon = {k: copy.deepcopy(v) for k, v in request.items() if k not in ("resolveConflicts", "clientRequestToken")}
    addon.update(status="CREATING", health={"issues": []})
    addon.setdefault("tags", {})
    return addon


def summarize(addon):
    """The add-on for the module's result: snake-cased keys, tags as they are, configuration as data."""
    if not addon:
        return {}
    health = addon.get("health") or {"issues": []}
    result = {
        "name": addon.get("addonName"),
        "cluster_name": addon.get("clusterName"),
        "arn": addon.get("addonArn"),
        "version": addon.get("addonVersion"),
        "status": addon.get("status"),
        "service_account_role_arn": addon.get("serviceAccountRoleArn"),
        "configuration_values": current_configuration(addon),
        "health": camel_dict_to_snake_dict(health),
        "tags": dict(addon.get("tags") or {}),
    }
    for key, field in (("publisher", "publisher"), ("owner", "owner"), ("created_at", "createdAt"), ("modified_at", "modifiedAt")):
        value = addon.get(field)
        if value is not None:
            result[key] = value if isinstance(value, str) else value.isoformat()
    return result


def health_message(addon):
    """The add-on's health issues on one line."""
    issues = ((addon or {}).get("health") or {}).get("issues") or []
    if not issues:
        return "no health issues reported"
    return "; ".join(
        f"{issue.get('code')}: {issue.get('message')}" + (f" ({', '.join(issue['resourceIds'])})" if issue.get("resourceIds") else "")
        for issue in issues
    )


# --------------------------------------------------------------------------
# AWS calls
# --------------------------------------------------------------------------

@AddonErrorHandler.list_error_handler("describe the EKS cluster")
@AWSRetry.jittered_backoff()
def describe_cluster(client, cluster_name):
    return client.describe_cluster(name=cluster_name)["cluster"]


@AddonErrorHandler.list_error_handler("describe the add-on")
@AWSRetry.jittered_backoff()
def describe_addon(client, cluster_name, name):
    return client.describe_addon(clusterName=cluster_name, addonName=name)["addon"]


@AddonErrorHandler.common_error_handler("describe the add-on versions")
@AWSRetry.jittered_backoff()
def describe_addon_versions(client, kubernetes_version, name=None):
    """DescribeAddonVersions' ``addons`` for a Kubernetes version (all pages), of one add-on when ``name`` is given."""
    kwargs = {"kubernetesVersion": kubernetes_version}
    if name:
        kwargs["addonName"] = name
    return common.all_items(client, "describe_addon_versions", "addons", **kwargs)


@AddonErrorHandler.common_error_handler("create the add-on")
def create_addon(client, request, timeout=common.ROLE_PROPAGATION_SECONDS, clock=None, sleep=None):
    """CreateAddon, tried again within ``timeout`` seconds while its service account role cannot be assumed yet (IAM is
    eventually consistent); throttling retried with backoff."""
    return common.retry_in_use(lambda: client.create_addon(**request), timeout, in_use=common.is_role_propagation_error,
                               clock=clock, sleep=sleep)["addon"]


@AddonErrorHandler.common_error_handler("update the add-on")
def update_addon(client, request, timeout=None, clock=None, sleep=None):
    """UpdateAddon; refused while the add-on is CREATING or UPDATING (ResourceInUseException), retried within ``timeout`` seconds."""
    return common.retry_in_use(lambda: client.update_addon(**request), timeout, clock=clock, sleep=sleep)["update"]


@AddonErrorHandler.deletion_error_handler("delete the add-on")
def delete_addon(client, cluster_name, name, preserve=False, timeout=None, clock=None, sleep=None):
    """DeleteAddon (``preserve`` keeps its Kubernetes objects); False when it was gone already."""
    common.retry_in_use(lambda: client.delete_addon(clusterName=cluster_name, addonName=name, preserve=preserve), timeout,
                        clock=clock, sleep=sleep)
    return True


def _subject(cluster_name, name):
    return f"add-on {name} of cluster {cluster_name}"


def wait_until_idle(client, cluster_name, name, timeout, delay=5, clock=None, sleep=None):
    """Poll while the add-on is CREATING or UPDATING (EKS refuses UpdateAddon then).

    Returns the last description, None when it is gone; any other status ends the wait.
    """
    return common.wait_for(
        lambda: describe_addon(client, cluster_name, name), lambda answer: answer is None or answer.get("status") not in BUSY_STATES,
        timeout, _subject(cluster_name, name), f"to finish {' or '.join(BUSY_STATES)} (EKS refuses an update until then)",
        delay=delay, error=TrainiumAddonError, clock=clock, sleep=sleep,
    )


def wait_for_addon(client, cluster_name, name, gone=False, timeout=900, delay=5, clock=None, sleep=None):
    """Poll until the add-on is ACTIVE (or gone when ``gone``); returns the last description (None when gone).

    The pauses are 1, 2, 4 s, then ``delay`` s (5) each: an add-on
    that settles within seconds does not hold the run for a whole ``delay``.

    CREATE_FAILED and UPDATE_FAILED (DELETE_FAILED when ``gone``) raise at once
    with the health issues. A DEGRADED add-on can still become ACTIVE (CoreDNS
    once there are nodes), so it is waited on; when the time runs out its
    health issues are part of the message.
    """
    def describe():
        return describe_addon(client, cluster_name, name)

    try:
        return common.wait_for_status(describe, "ACTIVE", timeout, _subject(cluster_name, name), gone=gone,
                                      failed=("DELETE_FAILED",) if gone else FAILED_STATES, reason=health_message,
                                      delay=delay, first_delay=1, error=TrainiumAddonError, clock=clock, sleep=sleep)
    except TrainiumAddonError as e:
        if not str(e.message).startswith("Timed out"):
            raise
        last = describe()
        if last and (last.get("health") or {}).get("issues"):
            raise TrainiumAddonError(message=f"{e.message}; health issues: {health_message(last)}") from None
        raise
