# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.eks_nodegroup moving a node group to a new launch template version (UpdateNodegroupVersion).

The rehearsal's moto answers UpdateNodegroupVersion with EKS's rules
(tools/rehearsal/moto_ext_eks_rules.py), among them the Capacity Block one:
EKS updates such a group's version only at desired size 0. The module scales
it to 0, updates it, scales it back and warns; an On-Demand group is updated
as it is. Every assertion on the account reads moto.
"""

from __future__ import annotations

import pytest

ACCOUNT = "123456789012"
BLOCK = {"InstanceMarketOptions": {"MarketType": "capacity-block"},
         "CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef2"}}}


@pytest.fixture()
def cluster(aws):
    ec2, eks = aws.client("ec2"), aws.client("eks")
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if s.get("DefaultForAz")][:2]
    eks.create_cluster(name="trn-versions", roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks", resourcesVpcConfig={"subnetIds": subnets})
    templates = {}
    for name, data in (("block", BLOCK), ("plain", {"InstanceType": "trn1.32xlarge"})):
        template = ec2.create_launch_template(LaunchTemplateName=f"trn-versions-{name}", LaunchTemplateData=data)["LaunchTemplate"]["LaunchTemplateId"]
        ec2.create_launch_template_version(LaunchTemplateId=template, LaunchTemplateData=dict(data, UserData="IyEvYmluL3NoCg=="))
        templates[name] = template
    return {"subnets": subnets, "templates": templates}


def nodegroup(run_module, rehearsal, cluster, kind, version, check=False):
    return run_module("trainium.eks.eks_nodegroup", {
        "cluster_name": "trn-versions", "name": f"trn-versions-{kind}", "node_role_arn": f"arn:aws:iam::{ACCOUNT}:role/node",
        "subnets": cluster["subnets"], "launch_template": {"id": cluster["templates"][kind], "version": str(version)},
        "capacity_type": "CAPACITY_BLOCK" if kind == "block" else "ON_DEMAND",
        "scaling_config": {"min_size": 2, "max_size": 2, "desired_size": 2}, "region": "us-west-2",
        "endpoint_url": rehearsal["AWS_ENDPOINT_URL"], "wait": True, "wait_timeout": 120}, check=check)


@pytest.mark.parametrize("kind", ["block", "plain"])
def test_a_new_launch_template_version_reaches_the_group_and_a_capacity_block_goes_through_0(aws, rehearsal, run_module, cluster, kind):
    eks = aws.client("eks")
    made = nodegroup(run_module, rehearsal, cluster, kind, 1)
    assert made.get("failed") is not True and made["changed"] is True, made
    checked = nodegroup(run_module, rehearsal, cluster, kind, 2, check=True)
    assert checked["changed"] is True and checked["nodegroup"]["launch_template"]["version"] == "2", checked
    group = eks.describe_nodegroup(clusterName="trn-versions", nodegroupName=f"trn-versions-{kind}")["nodegroup"]
    assert group["launchTemplate"]["version"] == "1"

    updated = nodegroup(run_module, rehearsal, cluster, kind, 2)
    assert updated.get("failed") is not True and updated["changed"] is True, updated
    group = eks.describe_nodegroup(clusterName="trn-versions", nodegroupName=f"trn-versions-{kind}")["nodegroup"]
    assert (group["launchTemplate"]["version"], group["scalingConfig"]) == ("2", {"minSize": 2, "maxSize": 2, "desiredSize": 2})
    kinds = [u["type"] for u in updated["updates"]]
    warnings = " ".join(str(w) for w in updated.get("warnings", []))
    if kind == "block":
        assert kinds == ["ConfigUpdate", "VersionUpdate", "ConfigUpdate"], updated["updates"]
        assert "on a Capacity Block, where EKS updates versions only at desired size 0" in warnings
        assert "scaling it from 2 nodes to 0, updating it, then scaling it back" in warnings
    else:
        assert kinds == ["VersionUpdate"] and not warnings, updated
    again = nodegroup(run_module, rehearsal, cluster, kind, 2)
    assert again.get("failed") is not True and again["changed"] is False and again["updates"] == [], again


def test_a_run_interrupted_after_the_scale_down_converges_on_the_next_run(aws, rehearsal, run_module, cluster):
    """Left at 0 on the old version (the run stopped after its scale-down): the next run updates the version first,
    which EKS allows at 0, then scales the group back; scaling up first would make EKS refuse the update."""
    eks = aws.client("eks")
    made = nodegroup(run_module, rehearsal, cluster, "block", 1)
    assert made.get("failed") is not True, made
    eks.update_nodegroup_config(clusterName="trn-versions", nodegroupName="trn-versions-block",
                                scalingConfig={"minSize": 0, "maxSize": 2, "desiredSize": 0})
    resumed = nodegroup(run_module, rehearsal, cluster, "block", 2)
    assert resumed.get("failed") is not True and resumed["changed"] is True, resumed
    assert [u["type"] for u in resumed["updates"]] == ["VersionUpdate", "ConfigUpdate"]
    assert not resumed.get("warnings"), resumed
    group = eks.describe_nodegroup(clusterName="trn-versions", nodegroupName="trn-versions-block")["nodegroup"]
    assert (group["launchTemplate"]["version"], group["scalingConfig"]["desiredSize"]) == ("2", 2)
