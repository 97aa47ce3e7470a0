# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Decisions of trainium_launch_template: data layout, normalization, what changes, validation, EC2 requests."""

from __future__ import annotations

import base64
import copy

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_launch_template as lt

SG = "sg-0123456789abcdef0"
CLUSTER_SG = "sg-0fedcba9876543210"


def params(**changes):
    base = {
        "name": "trn-rehearsal-trn1",
        "state": "present",
        "instance_type": "trn1.32xlarge",
        "efa_interfaces": 8,
        "security_group_ids": [SG, CLUSTER_SG],
        "image_id": "ami-0123456789abcdef0",
        "user_data": "MIME-Version: 1.0\n--//--\n",
        "root_volume_size": 500,
        "root_volume_iops": None,
        "root_volume_throughput": None,
        "placement_group": "trn-rehearsal-trn1",
        "capacity_reservation_id": None,
        "capacity_block": False,
        "metadata_hop_limit": 2,
        "tags": {"trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "trainium.eks"},
    }
    base.update(changes)
    return base


def as_ec2_returns(data):
    """What DescribeLaunchTemplateVersions gives back: other orders, and the template's own tags echoed (moto)."""
    echoed = copy.deepcopy(data)
    echoed["NetworkInterfaces"] = list(reversed(echoed["NetworkInterfaces"]))
    for interface in echoed["NetworkInterfaces"]:
        interface["Groups"] = list(reversed(interface["Groups"]))
    echoed["TagSpecifications"] = list(reversed(echoed["TagSpecifications"])) + [
        {"ResourceType": "launch-template", "Tags": [{"Key": "ManagedBy", "Value": "trainium.eks"}]},
    ]
    return echoed


# ---------------------------------------------------------------- layout


def test_trn1_gets_an_ena_primary_and_eight_efa_only_interfaces():
    """EC2 User Guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network cards"."""
    interfaces = lt.efa_network_interfaces(8, [SG])
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in interfaces] == \
        [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, 8)]
    assert all(i["DeleteOnTermination"] is True and i["Groups"] == [SG] for i in interfaces)
    # EFA-only interfaces hold no IP address: the node takes one of its subnet (the primary's), not one per card.
    assert not any(key.startswith(("PrivateIp", "SecondaryPrivateIp", "Ipv4", "Ipv6")) for i in interfaces for key in i)
    assert lt.count_efa_interfaces({"NetworkInterfaces": interfaces}) == 8


def test_sixteen_efa_interfaces_for_trn1n():
    interfaces = lt.efa_network_interfaces(16, [SG])
    assert len(interfaces) == 17 and lt.count_efa_interfaces({"NetworkInterfaces": interfaces}) == 16
    assert interfaces[-1]["NetworkCardIndex"] == 15 and interfaces[-1]["DeviceIndex"] == 0


def test_a_template_of_0_4_0_with_efa_interfaces_counts_them_too():
    old = [{"NetworkCardIndex": card, "DeviceIndex": 0 if card == 0 else 1, "InterfaceType": "efa"} for card in range(8)]
    assert lt.count_efa_interfaces({"NetworkInterfaces": old}) == 8


def test_no_efa_gives_one_plain_primary_interface():
    assert lt.efa_network_interfaces(0, [SG]) == [{"DeviceIndex": 0, "DeleteOnTermination": True, "Groups": [SG]}]


def test_data_has_imdsv2_gp3_root_placement_and_tags():
    data = lt.build_launch_template_data(params(root_volume_iops=6000, root_volume_throughput=500), root_device_name="/dev/sda1")
    assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 2, "HttpEndpoint": "enabled"}
    assert data["BlockDeviceMappings"] == [{
        "DeviceName": "/dev/sda1",
        "Ebs": {"VolumeSize": 500, "VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True, "Iops": 6000, "Throughput": 500},
    }]
    assert data["Placement"] == {"GroupName": "trn-rehearsal-trn1"}
    assert base64.b64decode(data["UserData"]).decode() == "MIME-Version: 1.0\n--//--\n"
    assert [s["ResourceType"] for s in data["TagSpecifications"]] == ["instance", "volume", "network-interface"]
    assert "CapacityReservationSpecification" not in data and "InstanceMarketOptions" not in data


def test_root_device_defaults_to_xvda_and_no_image_means_no_image_id():
    data = lt.build_launch_template_data(params(image_id=None))
    assert data["BlockDeviceMappings"][0]["DeviceName"] == "/dev/xvda"
    assert "ImageId" not in data


def test_capacity_block_targets_the_reservation():
    data = lt.build_launch_template_data(params(capacity_reservation_id="cr-0123456789abcdef0", capacity_block=True))
    assert data["CapacityReservationSpecification"] == {"CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}}
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}


def test_instance_type_is_in_the_data_only_when_given():
    assert lt.build_launch_template_data(params())["InstanceType"] == "trn1.32xlarge"
    assert "InstanceType" not in lt.build_launch_template_data(params(instance_type=None))


# ---------------------------------------------------------------- compare


def test_same_data_as_ec2_returns_it_is_left_alone():
    desired = lt.build_launch_template_data(params())
    assert lt.decide({"LaunchTemplateId": "lt-1"}, as_ec2_returns(desired), desired) == "none"


def test_string_typed_values_compare_equal():
    desired = lt.build_launch_template_data(params())
    returned = as_ec2_returns(desired)
    returned["MetadataOptions"]["HttpPutResponseHopLimit"] = "2"
    returned["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] = "true"
    assert lt.decide({"LaunchTemplateId": "lt-1"}, returned, desired) == "none"


def test_no_template_means_create():
    assert lt.decide(None, None, lt.build_launch_template_data(params())) == "create"


@pytest.mark.parametrize("change", [
    {"user_data": "MIME-Version: 1.0\n--//\nother\n--//--\n"},
    {"efa_interfaces": 16},
    {"instance_type": "trn1n.32xlarge"},
    {"instance_type": None},
    {"root_volume_size": 800},
    {"metadata_hop_limit": 1},
    {"security_group_ids": [SG]},
    {"image_id": "ami-0aaaaaaaaaaaaaaaa"},
    {"placement_group": None},
    {"capacity_reservation_id": "cr-0123456789abcdef0"},
    {"tags": {"ManagedBy": "trainium.eks", "team": "ml"}},
])
def test_changed_input_means_new_version(change):
    current = as_ec2_returns(lt.build_launch_template_data(params()))
    desired = lt.build_launch_template_data(params(**change))
    assert lt.decide({"LaunchTemplateId": "lt-1"}, current, desired) == "new_version"


def test_eight_to_sixteen_interfaces_shows_in_normalized_data():
    before = lt.normalize_data(lt.build_launch_template_data(params()))
    after = lt.normalize_data(lt.build_launch_template_data(params(efa_interfaces=16)))
    assert lt.count_efa_interfaces(before) == 8 and lt.count_efa_interfaces(after) == 16
    assert after["NetworkInterfaces"][:9] == before["NetworkInterfaces"]


def test_normalized_user_data_is_readable():
    assert lt.normalize_data({"UserData": base64.b64encode(b"hello").decode()}) == {"UserData": "hello"}


def test_tag_changes():
    """The template's tags are planned with trainium_common.tag_diff, always purging."""
    template = {"LaunchTemplateId": "lt-1", "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]}
    plan = lt.plan_changes(template, {}, {}, {"a": "1", "b": "3", "c": 4})
    assert (plan["tags_to_set"], plan["tags_to_remove"], plan["action"], plan["changed"]) == ({"b": "3", "c": "4"}, [], None, True)
    template["Tags"] = [{"Key": "a", "Value": "1"}, {"Key": "old", "Value": "x"}]
    assert lt.plan_changes(template, {}, {}, {"a": "1"})["tags_to_remove"] == ["old"]
    template["Tags"] = [{"Key": "a", "Value": "1"}]
    assert lt.plan_changes(template, {}, {}, {"a": "1"})["changed"] is False
    new = lt.plan_changes(None, None, {"InstanceType": "trn1.32xlarge"}, {"a": "1"})
    assert (new["action"], new["tags_to_set"], new["changed"]) == ("create", {}, True)


# ---------------------------------------------------------------- validation


def test_valid_params_have_no_errors():
    assert lt.validation_errors(params()) == []


@pytest.mark.parametrize("change, message", [
    ({"efa_interfaces": 33}, "efa_interfaces: got 33; allowed: an integer from 0 to 32"),
    ({"root_volume_size": 10}, "root_volume_size: got 10; allowed: an integer from 20 to 16384 (GiB)"),
    ({"root_volume_iops": 100}, "root_volume_iops: got 100; allowed: an integer from 3000 to 80000"),
    ({"root_volume_throughput": 5000}, "root_volume_throughput: got 5000; allowed: an integer from 125 to 2000"),
    ({"metadata_hop_limit": 0}, "metadata_hop_limit: got 0; allowed: an integer from 1 to 64"),
    ({"security_group_ids": []}, "security_group_ids: got an empty list; allowed: one or more security group IDs"),
    ({"security_group_ids": ["nodes"]}, "security_group_ids: got 'nodes'; allowed: security group IDs that start with 'sg-'"),
    ({"instance_type": "trn1-32xlarge"}, "instance_type: got 'trn1-32xlarge'; allowed: an EC2 instance type"),
    ({"image_id": "al2023"}, "image_id: got 'al2023'; allowed: an AMI ID that starts with 'ami-'"),
    ({"capacity_block": True}, "capacity_block: got true without capacity_reservation_id"),
    ({"capacity_reservation_id": "res-1"}, "capacity_reservation_id: got 'res-1'; allowed: a capacity reservation ID"),
    ({"user_data": "x" * 16385}, "user_data: got 16385 bytes; allowed: at most 16384 bytes"),
])
def test_bad_input_is_named_with_value_and_allowed(change, message):
    errors = lt.validation_errors(params(**change))
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_absent_needs_no_security_groups():
    assert lt.validation_errors({"state": "absent", "security_group_ids": []}) == []


# ---------------------------------------------------------------- EC2 requests


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


TEMPLATE = {
    "LaunchTemplateId": "lt-0123456789abcdef0", "LaunchTemplateName": "trn-rehearsal-trn1",
    "DefaultVersionNumber": 1, "LatestVersionNumber": 1,
    "Tags": [{"Key": "ManagedBy", "Value": "trainium.eks"}, {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}],
}


def _describe(stubber, template):
    if template is None:
        stubber.add_client_error("describe_launch_templates", "InvalidLaunchTemplateName.NotFoundException",
                                 expected_params={"LaunchTemplateNames": ["trn-rehearsal-trn1"]})
    else:
        stubber.add_response("describe_launch_templates", {"LaunchTemplates": [template]}, {"LaunchTemplateNames": ["trn-rehearsal-trn1"]})


def _image(stubber):
    stubber.add_response("describe_images", {"Images": [{"ImageId": "ami-0123456789abcdef0", "RootDeviceName": "/dev/xvda"}]},
                         {"ImageIds": ["ami-0123456789abcdef0"]})


def test_create_sends_the_data_and_the_template_tags(ec2):
    client, stubber = ec2
    desired = lt.build_launch_template_data(params(), "/dev/xvda")
    _image(stubber)
    _describe(stubber, None)
    stubber.add_response("create_launch_template", {"LaunchTemplate": TEMPLATE}, {
        "LaunchTemplateName": "trn-rehearsal-trn1",
        "LaunchTemplateData": desired,
        "TagSpecifications": [{"ResourceType": "launch-template", "Tags": common.tag_list(params()["tags"])}],
    })
    _describe(stubber, TEMPLATE)
    changed, before, _after, template, _data = lt.ensure_present(client, params(), check_mode=False)
    assert changed is True and before is None
    assert template["LaunchTemplateId"] == "lt-0123456789abcdef0"


def test_changed_data_adds_a_version_and_makes_it_default(ec2):
    client, stubber = ec2
    current = as_ec2_returns(lt.build_launch_template_data(params(), "/dev/xvda"))
    desired = lt.build_launch_template_data(params(efa_interfaces=16), "/dev/xvda")
    _image(stubber)
    _describe(stubber, TEMPLATE)
    stubber.add_response("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": current}]},
                         {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]})
    stubber.add_response("create_launch_template_version", {"LaunchTemplateVersion": {"VersionNumber": 2}},
                         {"LaunchTemplateId": "lt-0123456789abcdef0", "LaunchTemplateData": desired})
    stubber.add_response("modify_launch_template", {"LaunchTemplate": dict(TEMPLATE, DefaultVersionNumber=2)},
                         {"LaunchTemplateId": "lt-0123456789abcdef0", "DefaultVersion": "2"})
    _describe(stubber, dict(TEMPLATE, DefaultVersionNumber=2, LatestVersionNumber=2))
    changed, _before, _after, template, data = lt.ensure_present(client, params(efa_interfaces=16), check_mode=False)
    assert changed is True
    assert lt.template_result(template, data)["default_version"] == 2
    assert lt.template_result(template, data)["efa_interfaces"] == 16


def test_unchanged_data_makes_no_write_call(ec2):
    client, stubber = ec2
    current = as_ec2_returns(lt.build_launch_template_data(params(), "/dev/xvda"))
    _image(stubber)
    _describe(stubber, TEMPLATE)
    stubber.add_response("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": current}]},
                         {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]})
    changed, *_rest = lt.ensure_present(client, params(), check_mode=False)
    assert changed is False


def test_check_mode_reports_the_change_without_writing(ec2):
    client, stubber = ec2
    current = as_ec2_returns(lt.build_launch_template_data(params(), "/dev/xvda"))
    _image(stubber)
    _describe(stubber, TEMPLATE)
    stubber.add_response("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": current}]},
                         {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]})
    changed, before, after, _template, _data = lt.ensure_present(client, params(user_data="other"), check_mode=True)
    assert changed is True
    assert lt.diff_view(before)["UserData"] == "MIME-Version: 1.0\n--//--\n"
    assert lt.diff_view(after)["UserData"] == "other"


def test_tag_drift_on_the_template_is_fixed_without_a_new_version(ec2):
    client, stubber = ec2
    current = as_ec2_returns(lt.build_launch_template_data(params(), "/dev/xvda"))
    drifted = dict(TEMPLATE, Tags=[{"Key": "ManagedBy", "Value": "someone"}, {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}])
    _image(stubber)
    _describe(stubber, drifted)
    stubber.add_response("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": current}]},
                         {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]})
    stubber.add_response("create_tags", {}, {"Resources": ["lt-0123456789abcdef0"], "Tags": [{"Key": "ManagedBy", "Value": "trainium.eks"}]})
    _describe(stubber, TEMPLATE)
    changed, *_rest = lt.ensure_present(client, params(), check_mode=False)
    assert changed is True


def test_absent_deletes_by_name_and_missing_is_fine(ec2):
    client, stubber = ec2
    _describe(stubber, TEMPLATE)
    stubber.add_response("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": {}}]},
                         {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]})
    stubber.add_response("delete_launch_template", {"LaunchTemplate": TEMPLATE}, {"LaunchTemplateName": "trn-rehearsal-trn1"})
    assert lt.ensure_absent(client, "trn-rehearsal-trn1", check_mode=False)[0] is True
    _describe(stubber, None)
    assert lt.ensure_absent(client, "trn-rehearsal-trn1", check_mode=False) == (False, None)


def test_aws_errors_become_module_errors(ec2):
    client, stubber = ec2
    stubber.add_client_error("describe_launch_templates", "UnauthorizedOperation", http_status_code=403,
                             expected_params={"LaunchTemplateNames": ["trn-rehearsal-trn1"]})
    with pytest.raises(lt.TrainiumLaunchTemplateError) as raised:
        lt.describe_launch_template(client, "trn-rehearsal-trn1")
    assert "Failed to describe launch template" in raised.value.message
