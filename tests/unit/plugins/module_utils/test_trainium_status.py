# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The AWS half of playbooks/status.yml (against moto's in-process AWS) and
the figures of the training script's LOG line (in the script's own format)."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from ansible_collections.trainium.eks.plugins.module_utils import trainium_status as st

REPO_ROOT = Path(st.__file__).resolve().parents[2]
REGION = "us-west-2"


def _workload_log_format():
    """The format string train_bert.py logs each step with (read from the script, so a change there shows here)."""
    source = (REPO_ROOT / "roles/training_image/files/workload/train_bert.py").read_text()
    return re.search(r'log\(runtime, "(%s - \(%d, %d\) step_loss[^"]*)"', source).group(1)


def test_log_figures_reads_the_workloads_own_line():
    line = "LOG " + _workload_log_format() % ("2026-12-01 16:00:00", 0, 42, 6.1234, 1.5e-3, 123.45)
    assert st.log_figures(line) == {"epoch": 0, "step": 42, "loss": 6.1234, "lr": 0.0015, "throughput": 123.45}


@pytest.mark.parametrize("line", [None, "", "LOG resuming from /data/output/ckpt_20.pt at step 20", "step_loss : 3"])
def test_log_figures_of_a_line_without_figures_is_empty(line):
    assert st.log_figures(line) == {}


@pytest.fixture(name="clients")
def fixture_clients(monkeypatch):
    for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield {service: boto3.client(service, region_name=REGION) for service in ("eks", "fsx", "cloudwatch", "ec2")}


def _network(ec2):
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    return [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"{REGION}{z}")["Subnet"]["SubnetId"]
            for i, z in enumerate("bd")]


def _cluster_with_a_node_group(clients):
    """Cluster trn-x with node group trn-x-trn1 (2 of 1-3 nodes); returns the subnets."""
    subnets = _network(clients["ec2"])
    role = "arn:aws:iam::123456789012:role/trn-x-cluster"
    clients["eks"].create_cluster(name="trn-x", version="1.34", roleArn=role, resourcesVpcConfig={"subnetIds": subnets})
    clients["eks"].create_nodegroup(clusterName="trn-x", nodegroupName="trn-x-trn1", subnets=subnets[:1], nodeRole=role,
                                    scalingConfig={"minSize": 1, "maxSize": 3, "desiredSize": 2}, instanceTypes=["trn1.32xlarge"])
    return subnets


def test_nothing_exists_is_reported_part_by_part(clients):
    status = st.read_aws(clients["eks"], clients["fsx"], clients["cloudwatch"], "trn-x", ["trn-x-trn1"], "trn-x-data")
    assert status == {
        "cluster": {"name": "trn-x", "exists": False},
        "nodegroups": [{"name": "trn-x-trn1", "exists": False}],
        "file_system": {"name": "trn-x-data", "exists": False},
    }


def test_cluster_node_groups_and_file_system_with_its_use(clients):
    subnets = _cluster_with_a_node_group(clients)
    fs = clients["fsx"].create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=subnets[:1], Tags=[{"Key": "Name", "Value": "trn-x-data"}],
        LustreConfiguration={"DeploymentType": "PERSISTENT_1", "PerUnitStorageThroughput": 200},
    )["FileSystem"]["FileSystemId"]
    clients["fsx"].create_file_system(FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=subnets[:1],
                                      Tags=[{"Key": "Name", "Value": "someone-else"}])
    now = datetime.datetime.now(datetime.timezone.utc)
    clients["cloudwatch"].put_metric_data(Namespace="AWS/FSx", MetricData=[{
        "MetricName": "FreeDataStorageCapacity", "Dimensions": [{"Name": "FileSystemId", "Value": fs}],
        "Timestamp": now - datetime.timedelta(minutes=5), "Value": 900 * st.GIB}])

    status = st.read_aws(clients["eks"], clients["fsx"], clients["cloudwatch"], "trn-x", ["trn-x-trn1", "trn-x-system"], "trn-x-data", now=now)

    assert status["cluster"]["exists"] and status["cluster"]["version"] == "1.34"
    assert status["cluster"]["status"] == "ACTIVE"
    # What a kubeconfig needs (a later stage run as a job of its own writes one from them).
    described = clients["eks"].describe_cluster(name="trn-x")["cluster"]
    assert status["cluster"]["arn"] == described["arn"] and status["cluster"]["arn"].endswith(":cluster/trn-x")
    assert status["cluster"]["certificate_authority"] == described["certificateAuthority"]["data"]
    assert status["cluster"]["endpoint"] == described["endpoint"]
    trn1, system = status["nodegroups"]
    assert (trn1["exists"], trn1["desired"], trn1["min"], trn1["max"], trn1["instance_types"]) == (True, 2, 1, 3, ["trn1.32xlarge"])
    assert system == {"name": "trn-x-system", "exists": False}
    file_system = status["file_system"]
    assert (file_system["id"], file_system["capacity_gib"], file_system["deployment_type"]) == (fs, 1200, "PERSISTENT_1")
    assert file_system["free_gib"] == 900.0
    assert file_system["used_percent"] == 25.0


def test_without_a_file_system_name_fsx_is_not_asked(clients):
    _cluster_with_a_node_group(clients)

    class NoCalls:
        def __getattr__(self, name):
            raise AssertionError(f"{name} was called")

    status = st.read_aws(clients["eks"], NoCalls(), NoCalls(), "trn-x", ["trn-x-trn1"], None)
    assert status["nodegroups"][0]["desired"] == 2 and status["nodegroups"][0]["exists"] is True
    assert status["file_system"] == {"name": None, "exists": False}
