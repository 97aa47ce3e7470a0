# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trn_nodegroup role (and trainium.eks.eks_nodegroup) against moto server: in-place updates, an immutable
difference, absent with foreign node groups.

The role flow (converge, idempotence, check mode, absent) is owned by the Molecule scenario molecule/trn_nodegroup.
Each test starts from an empty account, builds the role's inputs with boto3
(VPC, subnets in us-west-2b and us-west-2d, EKS cluster, launch template),
runs preflight + the role, and asserts on what EKS and IAM then list.
"""

from __future__ import annotations

import json
import re

import pytest

CLUSTER = "trn-rehearsal"
NODEGROUP = f"{CLUSTER}-trn1"
NODE_ROLE = f"{CLUSTER}-node"

PLAYBOOK = """
- name: Preflight and trn_nodegroup
  hosts: trainium
  gather_facts: false
  tasks:
    - name: Run preflight
      ansible.builtin.include_role:
        name: trainium.eks.preflight
      when: trn_nodegroup_state | default('present') == 'present'
    - name: Run trn_nodegroup
      ansible.builtin.include_role:
        name: trainium.eks.trn_nodegroup
    - name: Show the facts
      ansible.builtin.debug:
        msg: "FACTS {{ trn_nodegroup_facts | to_json }} END"
"""


@pytest.fixture
def inputs(aws):
    """The upstream resources the role needs, made with boto3."""
    ec2, eks, iam = aws.client("ec2"), aws.client("eks"), aws.client("iam")
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    cluster_role = iam.create_role(RoleName=f"{CLUSTER}-test-cluster", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {
        zone: ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for zone, cidr in (("us-west-2b", "10.0.0.0/20"), ("us-west-2d", "10.0.16.0/20"))
    }
    eks.create_cluster(name=CLUSTER, roleArn=cluster_role, resourcesVpcConfig={"subnetIds": list(subnets.values())})
    template = ec2.create_launch_template(LaunchTemplateName=NODEGROUP, LaunchTemplateData={"InstanceType": "trn1.32xlarge"})["LaunchTemplate"]
    return {
        "subnets": subnets,
        "launch_template_id": template["LaunchTemplateId"],
        "vars": {
            "trn_nodegroup_subnets_by_zone": {zone: {"private": subnet} for zone, subnet in subnets.items()},
            "trn_nodegroup_launch_templates": {"trn1": {"id": template["LaunchTemplateId"], "name": NODEGROUP, "version": 1}},
            "trn_nodegroup_launch_template_ami_id": "ami-0123456789abcdef0",
        },
    }


@pytest.fixture
def role(run_playbook, tmp_path, local_vars):
    playbook = tmp_path / "trn_nodegroup.yml"
    playbook.write_text(PLAYBOOK)

    def run(extra=None, args=(), pools=None):
        extra_vars = dict(extra or {})
        if pools is not None:
            extra_vars["trainium_node_pools"] = pools
        return run_playbook(str(playbook), extra_vars=extra_vars, args=args)

    return run


def _pool(local_vars, **changes):
    pool = dict(local_vars["trainium_node_pools"][0])
    pool.update(changes)
    return [pool]


def _facts(result):
    match = re.search(r"FACTS (\{.*?\}) END", result.text)
    assert match, result
    return json.loads(match.group(1))


def test_scaling_and_label_changes_update_in_place(aws, inputs, role, local_vars):
    assert role(inputs["vars"]).rc == 0
    eks = aws.client("eks")
    arn = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]["nodegroupArn"]

    scaled = role(inputs["vars"], pools=_pool(local_vars, max_count=3))
    assert scaled.rc == 0, scaled
    assert scaled.recap["changed"] == 1, scaled
    group = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]
    assert group["scalingConfig"] == {"minSize": 2, "maxSize": 3, "desiredSize": 2}
    assert group["nodegroupArn"] == arn  # updated, not replaced

    labelled = role(inputs["vars"], pools=_pool(local_vars, max_count=3, labels={"team": "ml"},
                                                taints=[{"key": "aws.amazon.com/neuron", "effect": "NoSchedule"}]))
    assert labelled.rc == 0, labelled
    group = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]
    assert group["labels"] == {"trainium.eks/pool": "trn1", "team": "ml"}
    assert group["taints"] == [{"key": "aws.amazon.com/neuron", "effect": "NO_SCHEDULE"}]

    relabelled = role(inputs["vars"], pools=_pool(local_vars, max_count=3))
    assert relabelled.rc == 0, relabelled
    group = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]
    assert group["labels"] == {"trainium.eks/pool": "trn1"} and group["taints"] == []
    assert role(inputs["vars"], pools=_pool(local_vars, max_count=3)).recap["changed"] == 0


def test_immutable_difference_fails_naming_it(aws, inputs, role):
    assert role(inputs["vars"]).rc == 0
    moved = dict(inputs["vars"], trn_nodegroup_subnets_by_zone={
        "us-west-2b": {"private": inputs["subnets"]["us-west-2d"]}, "us-west-2d": {"private": inputs["subnets"]["us-west-2d"]}})
    result = role(moved)
    assert result.rc != 0
    assert "differs in what EKS cannot change in place - subnets:" in result.text
    assert aws.client("eks").describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]["subnets"] == [inputs["subnets"]["us-west-2b"]]


def test_absent_removes_tagged_groups_and_role(aws, inputs, role):
    assert role(inputs["vars"]).rc == 0
    eks = aws.client("eks")
    # A node group left from a pool renamed since: tagged for the cluster, so absent deletes it too.
    node_role = aws.client("iam").get_role(RoleName=NODE_ROLE)["Role"]["Arn"]
    eks.create_nodegroup(clusterName=CLUSTER, nodegroupName=f"{CLUSTER}-renamed", nodeRole=node_role, subnets=[inputs["subnets"]["us-west-2b"]],
                         tags={"trainium.eks/cluster": CLUSTER})
    eks.create_nodegroup(clusterName=CLUSTER, nodegroupName="not-ours", nodeRole=node_role, subnets=[inputs["subnets"]["us-west-2b"]])

    gone = role({"trn_nodegroup_state": "absent"})
    assert gone.rc == 0, gone
    assert eks.list_nodegroups(clusterName=CLUSTER)["nodegroups"] == ["not-ours"]
    assert NODE_ROLE not in aws.resources()["iam_roles"]
    assert _facts(gone) == {"node_role_arn": None, "nodegroups": {}}

    again = role({"trn_nodegroup_state": "absent"})
    assert again.rc == 0 and again.recap["changed"] == 0, again

    eks.delete_nodegroup(clusterName=CLUSTER, nodegroupName="not-ours")
    eks.delete_cluster(name=CLUSTER)
    no_cluster = role({"trn_nodegroup_state": "absent"})
    assert no_cluster.rc == 0 and no_cluster.recap["changed"] == 0, no_cluster


FAULT = {"rehearsal.trainium.eks/fault": "create-failed"}  # tools/rehearsal/moto_ext_faults.py


def test_a_node_group_that_ended_create_failed_is_reported_and_replaced(aws, inputs, role):
    eks = aws.client("eks")
    # The first run's node group ends CREATE_FAILED (no capacity): the wait reports it with its health issues.
    failed = role(dict(inputs["vars"], trainium_tags=FAULT))
    assert failed.rc != 0, failed
    assert f"node group {NODEGROUP} is CREATE_FAILED; health issues: AsgInstanceLaunchFailures: Could not launch" in failed.text
    assert "FAILED - RETRYING" not in failed.text
    before = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]
    assert before["status"] == "CREATE_FAILED"

    # Told not to replace it, the next run stops with the health issues and leaves it.
    kept = role(dict(inputs["vars"], trn_nodegroup_replace_failed=False))
    assert kept.rc != 0 and "is CREATE_FAILED (AsgInstanceLaunchFailures: Could not launch" in kept.text, kept
    assert eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]["nodegroupArn"] == before["nodegroupArn"]

    # Check mode says what it would do and does nothing.
    checked = role(inputs["vars"], args=["--check"])
    assert checked.rc == 0 and "check mode: it would be deleted and created again" in checked.text, checked
    assert eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]["status"] == "CREATE_FAILED"

    # By default the next run warns with the health issues, deletes it and creates it again.
    replaced = role(inputs["vars"])
    assert replaced.rc == 0, replaced
    assert "is CREATE_FAILED (AsgInstanceLaunchFailures: Could not launch" in replaced.text
    after = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)["nodegroup"]
    assert after["status"] == "ACTIVE" and after["nodegroupArn"] != before["nodegroupArn"]
    assert _facts(replaced)["nodegroups"]["trn1"]["status"] == "ACTIVE"
    # Neither our warning nor amazon.aws.iam_role's standing notice comes with a deprecation line.
    assert "DEPRECATION" not in replaced.output
    assert role(inputs["vars"]).recap["changed"] == 0
