# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""EFA launch templates for Trainium nodes: pure decisions and the EC2 calls.

The pure part builds the ``LaunchTemplateData`` a Trainium node needs (one
EFA interface per network card, IMDSv2, an encrypted gp3 root volume, the
placement group and capacity reservation), normalizes it so that the data
EC2 returns for a version compares equal to the data we would send, and
decides what to do: create the template, add a version and make it the
default, or leave it alone.

Every EC2 call retries throttling with jittered backoff and turns botocore
errors into ``TrainiumLaunchTemplateError`` (an ``AnsibleAWSError``).
"""

from __future__ import annotations

import base64
import binascii
import copy
import re

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common

DEFAULT_ROOT_DEVICE = "/dev/xvda"
TAGGED_RESOURCE_TYPES = ("instance", "volume", "network-interface")
MAX_USER_DATA_BYTES = 16 * 1024
INSTANCE_TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")

# option: (minimum, maximum, what it is)
RANGES = {
    "efa_interfaces": (0, 32, "EFA interfaces, one per network card; 0 for a type without EFA"),
    "root_volume_size": (20, 16384, "GiB"),
    "root_volume_iops": (3000, 80000, "gp3 IOPS"),
    "root_volume_throughput": (125, 2000, "gp3 MiB/s"),
    "metadata_hop_limit": (1, 64, "IMDS hops"),
}


class TrainiumLaunchTemplateError(common.TrainiumAWSError):
    pass


LaunchTemplateErrorHandler = common.error_handler(
    TrainiumLaunchTemplateError,
    "InvalidLaunchTemplateName.NotFoundException",
    "InvalidLaunchTemplateId.NotFound",
    "InvalidLaunchTemplateId.NotFoundException",
    "InvalidAMIID.NotFound",
)


# ---------------------------------------------------------------- pure logic


def validation_errors(params):
    """One message per bad option: the option, the value and what is allowed."""
    errors = []
    for option, (low, high, unit) in RANGES.items():
        value = params.get(option)
        if value is None:
            continue
        if not low <= value <= high:
            errors.append(f"{option}: got {value}; allowed: an integer from {low} to {high} ({unit})")
    if params.get("state", "present") != "present":
        return errors
    if not params.get("security_group_ids"):
        errors.append(
            "security_group_ids: got an empty list; allowed: one or more security group IDs (sg-...), "
            "at least the node group whose self-referencing rule EFA needs"
        )
    else:
        for group in params["security_group_ids"]:
            if not str(group).startswith("sg-"):
                errors.append(f"security_group_ids: got {group!r}; allowed: security group IDs that start with 'sg-'")
    instance_type = params.get("instance_type")
    if instance_type and not INSTANCE_TYPE_PATTERN.match(str(instance_type)):
        errors.append(f"instance_type: got {instance_type!r}; allowed: an EC2 instance type such as 'trn1.32xlarge', or no value for none")
    image_id = params.get("image_id")
    if image_id and not str(image_id).startswith("ami-"):
        errors.append(f"image_id: got {image_id!r}; allowed: an AMI ID that starts with 'ami-', or no value for none")
    reservation = params.get("capacity_reservation_id")
    if reservation and not str(reservation).startswith("cr-"):
        errors.append(f"capacity_reservation_id: got {reservation!r}; allowed: a capacity reservation ID that starts with 'cr-'")
    if params.get("capacity_block") and not reservation:
        errors.append("capacity_block: got true without capacity_reservation_id; allowed: true only with the Capacity Block's ID (cr-...)")
    user_data = params.get("user_data")
    if user_data and len(user_data.encode("utf-8")) > MAX_USER_DATA_BYTES:
        errors.append(f"user_data: got {len(user_data.encode('utf-8'))} bytes; allowed: at most {MAX_USER_DATA_BYTES} bytes before base64")
    return errors


def efa_network_interfaces(count, security_group_ids):
    """EC2's layout for an instance with several network cards (EC2 User Guide, "Maximize network bandwidth on Amazon
    EC2 instances with multiple network cards"): an ENA primary interface at card 0 device 0 (an EFA-only interface
    cannot be the primary), an EFA-only interface at card 0 device 1 and one at device 0 of every other card.

    EFA-only interfaces hold no IP address: a node takes one address of its subnet for its interfaces, where one EFA
    interface (with IP) per card took 8 on a trn1.32xlarge and 16 on a trn1n or trn2. With no EFA (count 0), a plain
    primary interface that carries the security groups.
    """
    groups = list(security_group_ids)
    if count == 0:
        return [{"DeviceIndex": 0, "DeleteOnTermination": True, "Groups": groups}]
    primary = {"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface", "DeleteOnTermination": True, "Groups": groups}
    return [primary] + [
        {
            "NetworkCardIndex": card,
            "DeviceIndex": 1 if card == 0 else 0,
            "InterfaceType": "efa-only",
            "DeleteOnTermination": True,
            "Groups": list(groups),
        }
        for card in range(count)
    ]


def build_launch_template_data(params, root_device_name=None):
    """The LaunchTemplateData (request shape) for the module's options."""
    data = {
        "NetworkInterfaces": efa_network_interfaces(params["efa_interfaces"], params["security_group_ids"]),
        "MetadataOptions": {
            "HttpTokens": "required",
            "HttpPutResponseHopLimit": params.get("metadata_hop_limit") or 1,
            "HttpEndpoint": "enabled",
        },
    }
    if params.get("instance_type"):
        data["InstanceType"] = params["instance_type"]
    if params.get("image_id"):
        data["ImageId"] = params["image_id"]
    if params.get("user_data"):
        data["UserData"] = base64.b64encode(params["user_data"].encode("utf-8")).decode("ascii")
    if params.get("root_volume_size"):
        ebs = {
            "VolumeSize": params["root_volume_size"],
            "VolumeType": "gp3",
            "Encrypted": True,
            "DeleteOnTermination": True,
        }
        if params.get("root_volume_iops"):
            ebs["Iops"] = params["root_volume_iops"]
        if params.get("root_volume_throughput"):
            ebs["Throughput"] = params["root_volume_throughput"]
        data["BlockDeviceMappings"] = [{"DeviceName": root_device_name or DEFAULT_ROOT_DEVICE, "Ebs": ebs}]
    if params.get("placement_group"):
        data["Placement"] = {"GroupName": params["placement_group"]}
    if params.get("capacity_reservation_id"):
        data["CapacityReservationSpecification"] = {
            "CapacityReservationTarget": {"CapacityReservationId": params["capacity_reservation_id"]},
        }
    if params.get("capacity_block"):
        data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    if params.get("tags"):
        data["TagSpecifications"] = [
            {"ResourceType": kind, "Tags": common.tag_list(params["tags"])} for kind in TAGGED_RESOURCE_TYPES
        ]
    return data


def _decode_user_data(value):
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return value


def _scalar(value):
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        if value.isdigit():
            return int(value)
    return value


def _clean(value):
    """Drop empty values, turn "true"/"8" into True/8, recursively."""
    if isinstance(value, dict):
        cleaned = {k: _clean(v) for k, v in value.items()}
        return {k: v for k, v in cleaned.items() if v not in (None, {}, [], "")}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return _scalar(value)


def normalize_data(data):
    """A canonical form of LaunchTemplateData for comparison.

    Interfaces in card order, security groups and tags sorted, user data
    decoded, booleans and numbers typed, empty values dropped, tag
    specifications of the template itself (``launch-template``) left out.
    """
    data = _clean(copy.deepcopy(data or {}))
    if "UserData" in data:
        data["UserData"] = _decode_user_data(data["UserData"])
    interfaces = data.get("NetworkInterfaces")
    if interfaces:
        for interface in interfaces:
            if "Groups" in interface:
                interface["Groups"] = sorted(interface["Groups"])
        data["NetworkInterfaces"] = sorted(
            interfaces, key=lambda i: (i.get("NetworkCardIndex", 0), i.get("DeviceIndex", 0)),
        )
    if data.get("BlockDeviceMappings"):
        data["BlockDeviceMappings"] = sorted(data["BlockDeviceMappings"], key=lambda m: m.get("DeviceName", ""))
    # Tags of the template itself are not launch data (moto echoes them there).
    specs = [s for s in data.get("TagSpecifications", []) if s.get("ResourceType") != "launch-template"]
    data.pop("TagSpecifications", None)
    if specs:
        for spec in specs:
            spec["Tags"] = sorted(spec.get("Tags", []), key=lambda t: t["Key"])
        data["TagSpecifications"] = sorted(specs, key=lambda s: s.get("ResourceType", ""))
    return data


def decide(template, current_data, desired_data):
    """What to do: ``create`` (no template), ``new_version`` (data differ) or ``none``."""
    if template is None:
        return "create"
    if normalize_data(current_data) != normalize_data(desired_data):
        return "new_version"
    return "none"


def template_tags(template):
    return {t["Key"]: t["Value"] for t in (template or {}).get("Tags", [])}


def plan_changes(template, current_data, desired_data, tags):
    """What to do, in the shape of ``trainium_common.new_plan``: ``action`` (``create``,
    ``new_version`` or None, see ``decide``) and the changes to the tags of an existing
    template (all tags it carries but ``tags`` are removed); a new template gets its tags at creation."""
    action = decide(template, current_data, desired_data)
    tag_changes = common.tag_diff(template_tags(template), tags or {}) if template is not None else ({}, [])
    return common.new_plan(tags=tag_changes, action=None if action == "none" else action)


# EFA interfaces: EFA-only (no IP address) and, in templates made before 0.5.0, EFA with an IP address.
EFA_INTERFACE_TYPES = ("efa-only", "efa")


def count_efa_interfaces(data):
    return sum(1 for i in (data or {}).get("NetworkInterfaces", []) if i.get("InterfaceType") in EFA_INTERFACE_TYPES)


def template_result(template, data):
    """The module's launch_template return value."""
    if template is None:
        return {}
    return {
        "id": template.get("LaunchTemplateId"),
        "name": template.get("LaunchTemplateName"),
        "default_version": template.get("DefaultVersionNumber"),
        "latest_version": template.get("LatestVersionNumber"),
        "efa_interfaces": count_efa_interfaces(data),
        "tags": template_tags(template),
    }


def diff_view(data):
    """Launch template data as shown in a diff: normalized, user data readable."""
    return normalize_data(data) if data else {}


# ---------------------------------------------------------------- EC2 calls


@LaunchTemplateErrorHandler.list_error_handler("describe launch template", default_value=None)
@AWSRetry.jittered_backoff()
def describe_launch_template(client, name):
    found = client.describe_launch_templates(LaunchTemplateNames=[name])["LaunchTemplates"]
    return found[0] if found else None


@LaunchTemplateErrorHandler.list_error_handler("describe launch template version", default_value=None)
@AWSRetry.jittered_backoff()
def describe_default_version_data(client, template_id):
    versions = client.describe_launch_template_versions(
        LaunchTemplateId=template_id, Versions=["$Default"],
    )["LaunchTemplateVersions"]
    return versions[0].get("LaunchTemplateData", {}) if versions else None


@LaunchTemplateErrorHandler.list_error_handler("describe image", default_value=None)
@AWSRetry.jittered_backoff()
def describe_root_device_name(client, image_id):
    images = client.describe_images(ImageIds=[image_id])["Images"]
    return images[0].get("RootDeviceName") if images else None


@LaunchTemplateErrorHandler.common_error_handler("create launch template")
@AWSRetry.jittered_backoff()
def create_launch_template(client, name, data, tags):
    params = {"LaunchTemplateName": name, "LaunchTemplateData": data}
    if tags:
        params["TagSpecifications"] = [{"ResourceType": "launch-template", "Tags": common.tag_list(tags)}]
    return client.create_launch_template(**params)["LaunchTemplate"]


@LaunchTemplateErrorHandler.common_error_handler("create launch template version")
@AWSRetry.jittered_backoff()
def create_launch_template_version(client, template_id, data):
    return client.create_launch_template_version(
        LaunchTemplateId=template_id, LaunchTemplateData=data,
    )["LaunchTemplateVersion"]["VersionNumber"]


@LaunchTemplateErrorHandler.common_error_handler("set the default launch template version")
@AWSRetry.jittered_backoff()
def set_default_version(client, template_id, version):
    return client.modify_launch_template(LaunchTemplateId=template_id, DefaultVersion=str(version))["LaunchTemplate"]


@LaunchTemplateErrorHandler.deletion_error_handler("delete launch template")
@AWSRetry.jittered_backoff()
def delete_launch_template(client, name):
    client.delete_launch_template(LaunchTemplateName=name)
    return True


# ---------------------------------------------------------------- the flow


def ensure_present(client, params, check_mode):
    """Create or update the template. Returns (changed, before, after, template, data)."""
    root_device = None
    if params.get("image_id") and params.get("root_volume_size"):
        root_device = describe_root_device_name(client, params["image_id"])
    desired = build_launch_template_data(params, root_device)
    template = describe_launch_template(client, params["name"])
    current = describe_default_version_data(client, template["LaunchTemplateId"]) if template else None
    plan = plan_changes(template, current, desired, params.get("tags"))
    data = desired if plan["action"] else current
    if check_mode:
        return plan["changed"], current, desired, template, data
    if plan["action"] == "create":
        template = create_launch_template(client, params["name"], desired, params.get("tags"))
    elif plan["action"] == "new_version":
        version = create_launch_template_version(client, template["LaunchTemplateId"], desired)
        set_default_version(client, template["LaunchTemplateId"], version)
    common.update_tags(client, template["LaunchTemplateId"], plan["tags_to_set"], plan["tags_to_remove"])
    if plan["changed"]:
        template = describe_launch_template(client, params["name"])
    return plan["changed"], current, desired, template, data


@LaunchTemplateErrorHandler.list_error_handler("describe placement group", default_value=None)
@AWSRetry.jittered_backoff()
def describe_placement_group(client, name):
    groups = client.describe_placement_groups(Filters=[{"Name": "group-name", "Values": [name]}])["PlacementGroups"]
    # A group being deleted is as good as gone: its name can be created again.
    groups = [group for group in groups if group.get("State") not in ("deleting", "deleted")]
    return groups[0] if groups else None


@LaunchTemplateErrorHandler.common_error_handler("create placement group")
@AWSRetry.jittered_backoff()
def create_placement_group(client, name, strategy, tags):
    request = {"GroupName": name, "Strategy": strategy}
    if tags:
        request["TagSpecifications"] = [{"ResourceType": "placement-group", "Tags": common.tag_list(tags)}]
    client.create_placement_group(**request)


def ensure_placement_group(client, name, strategy, tags, check_mode):
    """Create the placement group ``name`` when missing, converge its tags. Returns (changed, before, after).

    A group of that name with another strategy cannot be changed: TrainiumLaunchTemplateError.
    """
    group = describe_placement_group(client, name)
    after = {"name": name, "strategy": strategy, "tags": dict(tags or {})}
    if group is None:
        if not check_mode:
            create_placement_group(client, name, strategy, tags)
        return True, None, after
    current_tags = {tag["Key"]: tag["Value"] for tag in group.get("Tags", [])}
    before = {"name": name, "strategy": group.get("Strategy"), "tags": current_tags}
    if group.get("Strategy") != strategy:
        raise TrainiumLaunchTemplateError(
            message=f"placement_group: {name} exists with strategy {group.get('Strategy')}, not {strategy}; a placement group's "
                    "strategy cannot change: delete it (state=absent on its node pool) or name another one")
    to_set, to_remove = common.tag_diff(current_tags, tags, purge_tags=True)
    if (to_set or to_remove) and not check_mode:
        common.update_tags(client, group["GroupId"], to_set, to_remove)
    after["tags"] = common.tags_after(current_tags, to_set, to_remove)
    return bool(to_set or to_remove), before, after


def ensure_absent(client, name, check_mode):
    """Delete the template by name. Returns (changed, before data)."""
    template = describe_launch_template(client, name)
    if template is None:
        return False, None
    current = describe_default_version_data(client, template["LaunchTemplateId"])
    if not check_mode:
        delete_launch_template(client, name)
    return True, current
