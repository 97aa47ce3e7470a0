# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's AWS API: moto server and the gaps tools/rehearsal/moto_ext.py closes."""

from __future__ import annotations

import base64
import pathlib
import time


def test_aws_apis_answer(aws):
    assert aws.client("eks").list_clusters()["clusters"] == []
    assert aws.client("sts").get_caller_identity()["Account"].isdigit()
    zones = aws.client("ec2").describe_availability_zones()["AvailabilityZones"]
    assert "us-west-2d" in [z["ZoneName"] for z in zones]
    for service, call in (("iam", "list_roles"), ("cloudformation", "describe_stacks"), ("ecr", "describe_repositories"),
                          ("fsx", "describe_file_systems"), ("s3", "list_buckets")):
        getattr(aws.client(service), call)()
    assert aws.client("ssm").get_parameters(Names=["/nothing/here"])["InvalidParameters"] == ["/nothing/here"]


def test_fsx_file_system_goes_from_creating_to_available(aws):
    fsx = aws.client("fsx")
    subnet = aws.client("ec2").describe_subnets()["Subnets"][0]["SubnetId"]
    created = fsx.create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[subnet],
        LustreConfiguration={"DeploymentType": "PERSISTENT_1", "PerUnitStorageThroughput": 200},
    )["FileSystem"]
    assert created["Lifecycle"] == "CREATING"
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = fsx.describe_file_systems(FileSystemIds=[created["FileSystemId"]])["FileSystems"][0]["Lifecycle"]
        seen.append(state)
        if state == "AVAILABLE":
            break
        time.sleep(1)
    assert seen[-1] == "AVAILABLE", seen
    assert seen[0] == "CREATING"


def test_eks_cluster_points_at_the_local_apiserver(aws, rehearsal):
    ca_file = pathlib.Path(rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "pki" / "ca.crt"
    assert ca_file.is_file(), "the rehearsal's Kubernetes CA is missing"
    eks = aws.client("eks")
    role = "arn:aws:iam::123456789012:role/eks"
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    created = eks.create_cluster(name="trn-rehearsal", roleArn=role, resourcesVpcConfig={"subnetIds": subnets})["cluster"]
    described = eks.describe_cluster(name="trn-rehearsal")["cluster"]
    for cluster in (created, described):
        assert cluster["endpoint"] == "https://127.0.0.1:6443"
        assert base64.b64decode(cluster["certificateAuthority"]["data"]) == ca_file.read_bytes()
