# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the IAM recorder (tests/iam/trainium_iam_recorder.py) keeps of EC2 answers: the resources' IDs and tags that
the EC2 statements' conditions read, launch template names and route table associations."""

from __future__ import annotations

import importlib.util
import pathlib

_PATH = pathlib.Path(__file__).resolve().parents[2] / "iam" / "trainium_iam_recorder.py"
_SPEC = importlib.util.spec_from_file_location("trainium_iam_recorder", _PATH)
recorder = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(recorder)

OURS = [{"Key": "trainium.eks/cluster", "Value": "trn-prod"}]


def test_ec2_answers_give_ids_and_tags_of_what_they_show():
    assert recorder.answer_facts("ec2", "CreateVpc", {"Vpc": {"VpcId": "vpc-1", "Tags": OURS}}) == {
        "Tags": {"vpc-1": {"trainium.eks/cluster": "trn-prod"}}}
    assert recorder.answer_facts("ec2", "DescribeSubnets", {"Subnets": [{"SubnetId": "subnet-1"}, {"SubnetId": "subnet-2", "Tags": OURS}]}) == {
        "Tags": {"subnet-1": {}, "subnet-2": {"trainium.eks/cluster": "trn-prod"}}}
    # CreateSecurityGroup and AllocateAddress answer with the bare ID.
    assert recorder.answer_facts("ec2", "CreateSecurityGroup", {"GroupId": "sg-1"}) == {"Tags": {"sg-1": {}}}
    assert recorder.answer_facts("ec2", "AllocateAddress", {"AllocationId": "eipalloc-1", "PublicIp": "198.51.100.7"}) == {
        "Tags": {"eipalloc-1": {}}}
    assert recorder.answer_facts("ec2", "DescribePlacementGroups", {"PlacementGroups": [{"GroupName": "trn-prod-pool", "Tags": OURS}]}) == {
        "Tags": {"trn-prod-pool": {"trainium.eks/cluster": "trn-prod"}}}


def test_ec2_answers_give_launch_template_names_and_route_table_associations():
    facts = recorder.answer_facts("ec2", "DescribeLaunchTemplates", {"LaunchTemplates": [
        {"LaunchTemplateId": "lt-0123456789abcdef0", "LaunchTemplateName": "trn-prod-pool", "Tags": OURS}]})
    assert facts["LaunchTemplates"] == {"trn-prod-pool": "lt-0123456789abcdef0"}
    facts = recorder.answer_facts("ec2", "DescribeRouteTables", {"RouteTables": [{"RouteTableId": "rtb-1", "Associations": [
        {"RouteTableAssociationId": "rtbassoc-1", "SubnetId": "subnet-1"}, {"RouteTableAssociationId": "rtbassoc-main", "Main": True}]}]})
    assert facts == {"Tags": {"rtb-1": {}}, "Associations": {"rtbassoc-1": ["rtb-1", "subnet-1"]}}
    # The association made by AssociateRouteTable: its route table and subnet are the request's.
    assert recorder.answer_facts("ec2", "AssociateRouteTable", {"AssociationId": "rtbassoc-2", "AssociationState": {"State": "associated"}}) == {
        "Associations": {"rtbassoc-2": []}}


def test_describe_tags_gives_only_what_it_lists_and_other_answers_nothing():
    facts = recorder.answer_facts("ec2", "DescribeTags", {"Tags": [
        {"ResourceId": "nat-1", "ResourceType": "natgateway", "Key": "Name", "Value": "trn-prod-nat"}]})
    assert facts == {"TagsSeen": {"nat-1": {"Name": "trn-prod-nat"}}}
    assert recorder.answer_facts("ec2", "DescribeInstanceTypes", {"InstanceTypes": [{"InstanceType": "trn1.32xlarge"}]}) is None
    assert recorder.answer_facts("ec2", "CreateRoute", {"Return": True}) is None


def test_the_caller_and_key_policies_are_kept_for_the_key_policy_check():
    """The secrets key's lifecycle actions are allowed by its key policy for the caller (iam_policy.KEY_POLICY_ACTIONS):
    the record keeps who the caller is and the Policy the collection sent."""
    arn = "arn:aws:sts::111122223333:assumed-role/deployer/ci"
    assert recorder.answer_facts("sts", "GetCallerIdentity", {"Arn": arn, "Account": "111122223333", "UserId": "AROA:ci"}) == {"Arn": arn}
    assert "Policy" in recorder.NAMED_PARAMETERS
