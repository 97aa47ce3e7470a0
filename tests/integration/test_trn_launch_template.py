# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trn_launch_template role (preflight first) against moto server: a changed input, an unpublished AMI, no custom AMI.

The role flow (converge, idempotence, check mode, absent) is owned by the Molecule scenario molecule/trn_launch_template.
Asserts on what EC2 lists afterwards.
"""

from __future__ import annotations

import base64

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


def default_data(ec2, name):
    version = ec2.describe_launch_template_versions(LaunchTemplateName=name, Versions=["$Default"])["LaunchTemplateVersions"][0]
    return version["VersionNumber"], version["LaunchTemplateData"]


def test_changed_input_adds_a_default_version(aws, network, run_playbook, playbook):
    ec2 = aws.client("ec2")
    assert run_playbook(playbook, extra_vars=role_vars(network)).rc == 0
    result = run_playbook(playbook, extra_vars=role_vars(network, trn_launch_template_metadata_hop_limit=3))
    assert result.rc == 0, result
    version, data = default_data(ec2, f"{CLUSTER}-trn1")
    assert version == 2
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 3


def test_unpublished_ami_release_fails_before_creating_anything(aws, network, run_playbook, playbook):
    before = aws.resources()
    extra = role_vars(network, trn_launch_template_ami_release="amazon-eks-node-al2023-x86_64-neuron-1.35-v20260501")
    result = run_playbook(playbook, extra_vars=extra)
    assert result.rc != 0
    assert 'trn_launch_template_ami_release: got "amazon-eks-node-al2023-x86_64-neuron-1.35-v20260501"' in result.text
    assert "allowed: 'recommended' or a published release" in result.text
    assert aws.resources() == before


def test_an_ami_whose_neuron_driver_cannot_run_the_image_s_sdk_is_refused_before_creating_anything(aws, network, run_playbook, playbook):
    """The rehearsal's recommended release (v20260714, Neuron driver 2.29) needs SDK 2.31 or later; the inventory's image is
    SDK 2.29 (the xla track's): refused by the validation, naming the window of releases that run it (SDK 2.29 names no
    lowest driver in the Neuron release notes, so the window starts at the table's first release). The default
    (v20260625) is used."""
    before = aws.resources()
    result = run_playbook(playbook, extra_vars=role_vars(network, trn_launch_template_ami_release="recommended"))
    assert result.rc != 0, result
    assert ("trn_launch_template_ami_release: got 'recommended' (str); allowed: a release from v20250920 up to, not including, "
            "v20260714") in result.text, result.text
    assert "trainium_image.base_image is SDK 2.29" in result.text
    assert aws.resources() == before
    made = run_playbook(playbook, extra_vars=role_vars(network))
    assert made.rc == 0, made
    assert '"ami_name": "amazon-eks-node-al2023-x86_64-neuron-1.35-v20260625"' in made.text.split("FACTS ", 1)[1]
    # The pinned release is shown with the one AWS recommends now, and what pinning costs.
    assert ("AWS recommends amazon-eks-node-al2023-x86_64-neuron-1.35-v20260714 now: a pinned release gets none of its later "
            "kernel, containerd and runc fixes") in made.text, made.text


def test_without_custom_ami_the_template_has_no_image(aws, network, run_playbook, playbook):
    result = run_playbook(playbook, extra_vars=role_vars(network, trn_launch_template_custom_ami=False))
    assert result.rc == 0, result
    _version, data = default_data(aws.client("ec2"), f"{CLUSTER}-trn1")
    assert "ImageId" not in data
    assert '"ami_id": null' in result.text.split("FACTS ", 1)[1]
