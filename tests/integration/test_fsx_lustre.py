# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.fsx_lustre (module and role) against the rehearsal's moto server.

The role flow (converge, idempotence, check mode, a run without the subnet, absent) is owned by the Molecule scenario
molecule/fsx_lustre; here: the module, and the role's refusal without a subnet.

Every assertion about what exists is made by listing the account with boto3,
not by trusting the module's answer.
"""

from __future__ import annotations

import pytest

NAME = "itest-data"


@pytest.fixture
def fsx_lustre(run_module):
    """trainium.eks.fsx_lustre on localhost in us-west-2: its result."""

    def run(module_args, check=False):
        return run_module("trainium.eks.fsx_lustre", dict({"region": "us-west-2"}, **module_args), check=check)

    return run


@pytest.fixture
def network(aws):
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.43.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.43.0.0/24", AvailabilityZone="us-west-2b")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="itest-lustre", Description="Lustre", VpcId=vpc)["GroupId"]
    return {"vpc": vpc, "subnet": subnet, "group": group}


def _args(network, **changes):
    args = {
        "name": NAME, "deployment_type": "PERSISTENT_1", "storage_capacity": 1200, "per_unit_storage_throughput": 200,
        "subnet_id": network["subnet"], "security_group_ids": [network["group"]], "tags": {"team": "ml"}, "wait": True, "wait_timeout": 60,
    }
    args.update(changes)
    return args


def _file_systems(aws):
    return aws.client("fsx").describe_file_systems()["FileSystems"]


def test_module_lifecycle(aws, fsx_lustre, network):
    created = fsx_lustre(_args(network))
    assert created.get("failed") is not True, created
    assert created["changed"] is True
    (fs,) = _file_systems(aws)
    assert fs["FileSystemId"] == created["file_system"]["file_system_id"]
    assert fs["Lifecycle"] == "AVAILABLE" and created["file_system"]["lifecycle"] == "AVAILABLE"
    assert (fs["StorageCapacity"], fs["SubnetIds"]) == (1200, [network["subnet"]])
    assert fs["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_1"
    assert fs["LustreConfiguration"]["PerUnitStorageThroughput"] == 200
    assert fs["LustreConfiguration"]["DataCompressionType"] == "LZ4"
    assert {t["Key"]: t["Value"] for t in fs["Tags"]} == {"Name": NAME, "team": "ml"}
    assert created["file_system"]["mount_name"] == fs["LustreConfiguration"]["MountName"]
    # Security groups are read from the file system's network interfaces, as on AWS.
    assert (created["file_system"]["security_group_ids"], created["file_system"]["vpc_id"]) == ([network["group"]], network["vpc"])

    again = fsx_lustre(_args(network))
    assert again.get("failed") is not True, again
    assert again["changed"] is False
    assert len(_file_systems(aws)) == 1

    grown = fsx_lustre(_args(network, storage_capacity=2400))
    assert grown.get("failed") is not True, grown
    assert grown["changed"] is True
    assert _file_systems(aws)[0]["StorageCapacity"] == 2400

    shrink = fsx_lustre(_args(network, storage_capacity=1200))
    assert shrink["failed"] is True
    assert shrink["msg"] == (f"storage_capacity: got 1200; file system {fs['FileSystemId']} has 2400 GiB and FSx for Lustre cannot shrink; "
                             "allowed: 2400 or more, in multiples of 2400 GiB")
    assert _file_systems(aws)[0]["StorageCapacity"] == 2400

    other_type = fsx_lustre(_args(network, storage_capacity=2400, deployment_type="PERSISTENT_2", per_unit_storage_throughput=250))
    assert other_type["failed"] is True
    assert other_type["immutable_differences"] == ["deployment_type: PERSISTENT_1 -> PERSISTENT_2"]

    other_group = aws.client("ec2").create_security_group(GroupName="itest-other", Description="other", VpcId=network["vpc"])["GroupId"]
    moved = fsx_lustre(_args(network, storage_capacity=2400, security_group_ids=[other_group]))
    assert moved["failed"] is True
    assert moved["immutable_differences"] == [f"security_group_ids: ['{network['group']}'] -> ['{other_group}']"]

    retuned = fsx_lustre(_args(network, storage_capacity=2400, per_unit_storage_throughput=100, tags={"team": "research"}))
    assert retuned.get("failed") is not True, retuned
    assert retuned["changed"] is True
    fs = _file_systems(aws)[0]
    assert fs["LustreConfiguration"]["PerUnitStorageThroughput"] == 100
    assert {t["Key"]: t["Value"] for t in fs["Tags"]} == {"Name": NAME, "team": "research"}

    gone = fsx_lustre({"name": NAME, "state": "absent", "wait": True, "wait_timeout": 60})
    assert gone.get("failed") is not True, gone
    assert gone["changed"] is True
    assert aws.resources()["fsx_file_systems"] == []

    gone_again = fsx_lustre({"name": NAME, "state": "absent", "wait": True})
    assert gone_again.get("failed") is not True, gone_again
    assert gone_again["changed"] is False


def test_check_mode_creates_nothing(aws, fsx_lustre, network):
    planned = fsx_lustre(_args(network), check=True)
    assert planned.get("failed") is not True, planned
    assert planned["changed"] is True
    assert planned["file_system"]["file_system_id"] is None
    assert planned["file_system"]["storage_capacity"] == 1200
    assert aws.resources()["fsx_file_systems"] == []


def test_check_mode_changes_nothing_on_an_existing_file_system(aws, fsx_lustre, network):
    assert fsx_lustre(_args(network))["changed"] is True
    grown = fsx_lustre(_args(network, storage_capacity=4800), check=True)
    assert grown["changed"] is True and grown["file_system"]["storage_capacity"] == 4800
    deleted = fsx_lustre({"name": NAME, "state": "absent"}, check=True)
    assert deleted["changed"] is True
    (fs,) = _file_systems(aws)
    assert fs["StorageCapacity"] == 1200


def test_bad_options_fail_before_any_call(aws, fsx_lustre, network):
    result = fsx_lustre(_args(network, storage_capacity=3000, data_repository={"import_path": "bucket/x"}))
    assert result["failed"] is True
    assert "storage_capacity: got 3000; allowed for PERSISTENT_1: 1200, 2400 or a multiple of 2400 GiB" in result["msg"]
    assert "data_repository.import_path: got 'bucket/x'; allowed: s3://<bucket>[/<prefix>]" in result["msg"]
    assert aws.resources()["fsx_file_systems"] == []


def test_scratch_with_s3_repository(aws, fsx_lustre, network):
    args = _args(network, deployment_type="SCRATCH_2", per_unit_storage_throughput=None, storage_capacity=2400,
                 data_repository={"import_path": "s3://itest-datasets/wikicorpus"})
    args.pop("per_unit_storage_throughput")
    created = fsx_lustre(args)
    assert created.get("failed") is not True, created
    repository = _file_systems(aws)[0]["LustreConfiguration"]["DataRepositoryConfiguration"]
    assert repository["ImportPath"] == "s3://itest-datasets/wikicorpus"
    assert repository["AutoImportPolicy"] == "NEW_CHANGED_DELETED"
    assert fsx_lustre(args)["changed"] is False
    assert fsx_lustre({"name": NAME, "state": "absent", "wait": True})["changed"] is True
    assert aws.resources()["fsx_file_systems"] == []


ROLE_PLAYBOOK = """
- name: Run trainium.eks.fsx_lustre
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.preflight
      when: fsx_lustre_state | default('present') == 'present'
    - role: trainium.eks.fsx_lustre
"""


def test_role_without_subnet_fails_before_creating(aws, run_playbook, tmp_path):
    playbook = tmp_path / "role.yml"
    playbook.write_text(ROLE_PLAYBOOK)
    result = run_playbook(str(playbook))
    assert result.rc != 0, result
    assert "fsx_lustre_subnet_id: got null, fsx_lustre_security_group_ids: got []; allowed: a subnet ID and at least one security group ID" in result.text
    assert aws.resources()["fsx_file_systems"] == []


def test_a_file_system_torn_down_with_a_final_backup_comes_back_from_it(aws, fsx_lustre, network):
    # No backup yet: "latest" creates the file system empty and says so.
    first = fsx_lustre(_args(network, restore_from_backup="latest"))
    assert first.get("failed") is not True, first
    assert first["restored_from_backup"] is None and "no AVAILABLE backup of file system 'itest-data' found" in str(first["warnings"])

    gone = fsx_lustre({"name": NAME, "state": "absent", "wait": True, "wait_timeout": 60})
    backup_id = gone["final_backup_id"]
    assert backup_id and aws.resources()["fsx_file_systems"] == []

    # A backup of another deployment type or larger than the capacity asked is refused before anything is created.
    other_type = fsx_lustre(_args(network, deployment_type="PERSISTENT_2", per_unit_storage_throughput=250, restore_from_backup="latest"))
    assert other_type["failed"] is True
    assert other_type["msg"] == (f"restore_from_backup: backup {backup_id} is of a PERSISTENT_1 file system, deployment_type is PERSISTENT_2;"
                                 " allowed: a backup of the same deployment type (set deployment_type to PERSISTENT_1)")
    missing = fsx_lustre(_args(network, restore_from_backup="backup-0123456789abcdef0"))
    assert missing["failed"] is True and missing["msg"] == "restore_from_backup: backup backup-0123456789abcdef0 not found"
    assert aws.resources()["fsx_file_systems"] == []

    planned = fsx_lustre(_args(network, restore_from_backup="latest"), check=True)
    assert planned["changed"] is True and planned["restored_from_backup"] == backup_id
    assert aws.resources()["fsx_file_systems"] == []

    restored = fsx_lustre(_args(network, restore_from_backup="latest"))
    assert restored.get("failed") is not True, restored
    assert restored["changed"] is True and restored["restored_from_backup"] == backup_id
    (fs,) = _file_systems(aws)
    assert fs["Lifecycle"] == "AVAILABLE" and fs["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_1"
    assert {t["Key"]: t["Value"] for t in fs["Tags"]} == {"Name": NAME, "team": "ml"}
    # An existing file system is never replaced: the next run with the same options changes nothing.
    again = fsx_lustre(_args(network, restore_from_backup="latest"))
    assert again["changed"] is False and "restored_from_backup" not in again
