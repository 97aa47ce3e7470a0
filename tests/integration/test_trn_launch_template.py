# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trn_launch_template role (preflight first) against moto server.

Asserts on what EC2 lists afterwards: launch template data, security group
rules, placement groups.
"""

from __future__ import annotations

import base64
import re

import pytest

PLAYBOOK = """\
- name: Preflight, then the Trainium launch templates
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.preflight
    - role: trainium.eks.trn_launch_template
  post_tasks:
    - name: Show the facts
      ansible.builtin.debug:
        msg: "FACTS {{ trn_launch_template_facts | to_json }}"
"""

CLUSTER = "trn-rehearsal"
ENDPOINT = "https://127.0.0.1:6443"


@pytest.fixture()
def playbook(tmp_path):
    path = tmp_path / "trn_launch_template.yml"
    path.write_text(PLAYBOOK)
    return str(path)


@pytest.fixture()
def network(aws):
    """A VPC and a stand-in EKS cluster security group, as the upstream roles would leave them."""
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    cluster_sg = ec2.create_security_group(GroupName="eks-cluster-sg", Description="stand-in", VpcId=vpc)["GroupId"]
    return {"vpc_id": vpc, "cluster_sg": cluster_sg}


def role_vars(network, **extra):
    data = {
        "trn_launch_template_vpc_id": network["vpc_id"],
        "trn_launch_template_cluster_security_group_id": network["cluster_sg"],
        "trn_launch_template_cluster_endpoint": ENDPOINT,
        "trn_launch_template_cluster_certificate_authority": base64.b64encode(b"fake CA").decode(),
    }
    data.update(extra)
    return data


def two_pools():
    return {
        "trainium_node_pools": [
            {"name": "trn1", "instance_type": "trn1.32xlarge", "count": 2, "root_volume_size_gib": 500},
            {"name": "trn1n", "instance_type": "trn1n.32xlarge", "count": 1, "root_volume_size_gib": 800,
             "labels": {"team": "ml"},
             "taints": [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"},
                        {"key": "dedicated", "effect": "NoExecute"}]},
        ],
    }


def kubelet_flags(user_data):
    """The flags under spec.kubelet.flags of the NodeConfig part, as {flag: value}."""
    text = base64.b64decode(user_data).decode()
    flags = re.findall(r'^      - "(--[a-z-]+)=(.*)"$', text, flags=re.M)
    return dict(flags)


def default_data(ec2, name):
    version = ec2.describe_launch_template_versions(LaunchTemplateName=name, Versions=["$Default"])["LaunchTemplateVersions"][0]
    return version["VersionNumber"], version["LaunchTemplateData"]


def security_groups(ec2):
    return {g["GroupName"]: g for g in ec2.describe_security_groups()["SecurityGroups"]}


def test_efa_templates_per_pool_then_unchanged_then_absent(aws, network, run_playbook, playbook):
    ec2 = aws.client("ec2")
    extra = dict(role_vars(network), **two_pools())
    result = run_playbook(playbook, extra_vars=extra)
    assert result.rc == 0, result
    assert result.recap["changed"] > 0

    groups = security_groups(ec2)
    nodes, lustre = groups[f"{CLUSTER}-nodes"], groups[f"{CLUSTER}-lustre"]
    for pool, instance_type, count, size in (("trn1", "trn1.32xlarge", 8, 500), ("trn1n", "trn1n.32xlarge", 16, 800)):
        version, data = default_data(ec2, f"{CLUSTER}-{pool}")
        assert version == 1
        assert data["InstanceType"] == instance_type
        nics = sorted(data["NetworkInterfaces"], key=lambda n: n["NetworkCardIndex"])
        assert [n["NetworkCardIndex"] for n in nics] == list(range(count))
        assert [n["DeviceIndex"] for n in nics] == [0] + [1] * (count - 1)
        assert {n["InterfaceType"] for n in nics} == {"efa"}
        assert all(sorted(n["Groups"]) == sorted([nodes["GroupId"], network["cluster_sg"]]) for n in nics)
        assert data["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 2, "HttpEndpoint": "enabled"}
        ebs = data["BlockDeviceMappings"][0]["Ebs"]
        assert (ebs["VolumeType"], ebs["VolumeSize"], ebs["Encrypted"]) == ("gp3", size, True)
        assert data["Placement"] == {"GroupName": f"{CLUSTER}-{pool}"}
        user_data = base64.b64decode(data["UserData"]).decode()
        assert f"name: {CLUSTER}" in user_data and f"apiServerEndpoint: {ENDPOINT}" in user_data
        assert "kind: NodeConfig" in user_data
        flags = kubelet_flags(data["UserData"])
        labels = ["eks.amazonaws.com/capacityType=ON_DEMAND", f"eks.amazonaws.com/nodegroup={CLUSTER}-{pool}", f"trainium.eks/pool={pool}"]
        if pool == "trn1n":
            labels.append("team=ml")
            assert flags["--register-with-taints"] == "aws.amazon.com/neuron=true:NoSchedule,dedicated:NoExecute"
        else:
            assert "--register-with-taints" not in flags
        assert flags["--node-labels"] == ",".join(sorted(labels))
        image = ec2.describe_images(ImageIds=[data["ImageId"]])["Images"][0]
        assert image["Name"] == "amazon-eks-node-al2023-x86_64-neuron-1.34-v20251120"

    pgs = {g["GroupName"]: g for g in ec2.describe_placement_groups()["PlacementGroups"]}
    assert sorted(pgs) == [f"{CLUSTER}-trn1", f"{CLUSTER}-trn1n"]
    assert {g["Strategy"] for g in pgs.values()} == {"cluster"}
    assert {t["Key"]: t["Value"] for t in pgs[f"{CLUSTER}-trn1"]["Tags"]}["trainium.eks/cluster"] == CLUSTER

    self_rule = [p for p in nodes["IpPermissions"] if p["IpProtocol"] == "-1"]
    lustre_in = sorted((p["FromPort"], p["ToPort"]) for p in nodes["IpPermissions"] if p["IpProtocol"] == "tcp")
    assert lustre_in == [(988, 988), (1018, 1023)]
    for permission in (p for p in nodes["IpPermissions"] if p["IpProtocol"] == "tcp"):
        assert [pair["GroupId"] for pair in permission["UserIdGroupPairs"]] == [lustre["GroupId"]]
    assert {pair["GroupId"] for p in self_rule for pair in p["UserIdGroupPairs"]} == {nodes["GroupId"], network["cluster_sg"]}
    assert not any(r.get("CidrIp") == "0.0.0.0/0" for g in (nodes, lustre) for p in g["IpPermissions"] for r in p["IpRanges"])
    assert sorted((p["FromPort"], p["ToPort"]) for p in lustre["IpPermissions"]) == [(988, 988), (1018, 1023)]
    for permission in lustre["IpPermissions"]:
        assert {pair["GroupId"] for pair in permission["UserIdGroupPairs"]} == {lustre["GroupId"], nodes["GroupId"]}

    facts = result.text.split("FACTS ", 1)[1]
    assert f'"node_security_group_id": "{nodes["GroupId"]}"' in facts
    assert f'"lustre_security_group_id": "{lustre["GroupId"]}"' in facts
    assert '"efa_interfaces": 16' in facts

    again = run_playbook(playbook, extra_vars=extra)
    assert again.rc == 0, again
    assert again.recap["changed"] == 0
    assert default_data(ec2, f"{CLUSTER}-trn1")[0] == 1

    gone = run_playbook(playbook, extra_vars=dict(extra, trn_launch_template_state="absent"))
    assert gone.rc == 0, gone
    assert ec2.describe_launch_templates()["LaunchTemplates"] == []
    assert ec2.describe_placement_groups()["PlacementGroups"] == []
    assert sorted(g["GroupName"] for g in ec2.describe_security_groups()["SecurityGroups"]) == ["default", "default", "eks-cluster-sg"]

    # Absent again: nothing left to delete, no failure.
    gone_again = run_playbook(playbook, extra_vars=dict(extra, trn_launch_template_state="absent"))
    assert gone_again.rc == 0, gone_again
    assert gone_again.recap["changed"] == 0


def test_changed_input_adds_a_default_version(aws, network, run_playbook, playbook):
    ec2 = aws.client("ec2")
    assert run_playbook(playbook, extra_vars=role_vars(network)).rc == 0
    result = run_playbook(playbook, extra_vars=role_vars(network, trn_launch_template_metadata_hop_limit=3))
    assert result.rc == 0, result
    version, data = default_data(ec2, f"{CLUSTER}-trn1")
    assert version == 2
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 3


def test_check_mode_on_an_empty_account_creates_nothing(aws, run_playbook, playbook):
    before = aws.resources()
    result = run_playbook(playbook, args=("--check", "--diff"))
    assert result.rc == 0, result
    assert result.recap["changed"] > 0
    assert f"Would create the security groups {CLUSTER}-nodes and {CLUSTER}-lustre" in result.text
    assert aws.resources() == before
    assert aws.client("ec2").describe_placement_groups()["PlacementGroups"] == []


def test_unpublished_ami_release_fails_before_creating_anything(aws, network, run_playbook, playbook):
    before = aws.resources()
    extra = role_vars(network, trn_launch_template_ami_release="amazon-eks-node-al2023-x86_64-neuron-1.34-v19990101")
    result = run_playbook(playbook, extra_vars=extra)
    assert result.rc != 0
    assert 'trn_launch_template_ami_release: got "amazon-eks-node-al2023-x86_64-neuron-1.34-v19990101"' in result.text
    assert "allowed: 'recommended' or a published release" in result.text
    assert aws.resources() == before


def test_without_custom_ami_the_template_has_no_image(aws, network, run_playbook, playbook):
    result = run_playbook(playbook, extra_vars=role_vars(network, trn_launch_template_custom_ami=False))
    assert result.rc == 0, result
    _version, data = default_data(aws.client("ec2"), f"{CLUSTER}-trn1")
    assert "ImageId" not in data
    assert '"ami_id": null' in result.text.split("FACTS ", 1)[1]
