# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium.eks.fsx_lustre run in-process; its FSx and EC2 clients are answered by botocore's Stubber.

A Stubber fails any call it was not told about, so "no mutating call in check
mode" is checked by simply not planning one.
"""

from __future__ import annotations

import copy
import json
import types

import pytest
from botocore.stub import Stubber

from ansible.module_utils.testing import patch_module_args
from ansible_collections.amazon.aws.plugins.module_utils import cloud
from ansible_collections.trainium.eks.plugins.module_utils import trainium_fsx
from ansible_collections.trainium.eks.plugins.modules import fsx_lustre


CONNECTION = {
    "region": "us-west-2",
    "access_key": "AKIAIOSFODNN7EXAMPLE",
    "secret_key": "not-a-real-secret",
    "endpoint_url": "http://127.0.0.1:1",
}
FS_ID = "fs-0123456789abcdef0"
ARN = f"arn:aws:fsx:us-west-2:123456789012:file-system/{FS_ID}"
SUBNET = "subnet-0123456789abcdef0"
GROUP = "sg-0123456789abcdef0"
ENI = "eni-0123456789abcdef0"
NAME = "trn-rehearsal-data"

ARGS = dict(
    CONNECTION,
    name=NAME,
    deployment_type="PERSISTENT_1",
    storage_capacity=1200,
    per_unit_storage_throughput=200,
    subnet_id=SUBNET,
    security_group_ids=[GROUP],
    tags={"trainium.eks/cluster": "trn-rehearsal"},
)

EXISTING = {
    "FileSystemId": FS_ID,
    "FileSystemType": "LUSTRE",
    "Lifecycle": "AVAILABLE",
    "StorageCapacity": 1200,
    "StorageType": "SSD",
    "SubnetIds": [SUBNET],
    "NetworkInterfaceIds": [ENI],
    "DNSName": f"{FS_ID}.fsx.us-west-2.amazonaws.com",
    "ResourceARN": ARN,
    "FileSystemTypeVersion": "2.15",
    "Tags": [{"Key": "Name", "Value": NAME}, {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}],
    "LustreConfiguration": {"DeploymentType": "PERSISTENT_1", "PerUnitStorageThroughput": 200, "MountName": "abcdef12", "DataCompressionType": "LZ4"},
}
OTHER = dict(copy.deepcopy(EXISTING), FileSystemId="fs-0000000000000000e", Tags=[{"Key": "Name", "Value": "someone-else"}])


def existing(**changes):
    result = copy.deepcopy(EXISTING)
    result.update(changes)
    return result


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL", "AWS_URL", "EC2_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    monkeypatch.setattr(cloud, "time", types.SimpleNamespace(sleep=lambda seconds: None))


@pytest.fixture
def aws(monkeypatch):
    """plan[service] = [(method, response or ('error', code), expected params)]; stubbers are checked at the end."""
    holder = {"plan": {"fsx": [], "ec2": []}, "stubbers": []}
    real_client = fsx_lustre.AnsibleAWSModule.client

    def client(module, service, retry_decorator=None, **extra):
        conn = real_client(module, service, retry_decorator=retry_decorator, **extra)
        stubber = Stubber(conn)
        for method, answer, expected in holder["plan"][service]:
            if isinstance(answer, tuple):
                stubber.add_client_error(method, answer[1], answer[2] if len(answer) > 2 else "error", 400, expected)
            else:
                stubber.add_response(method, answer, expected)
        stubber.activate()
        holder["stubbers"].append(stubber)
        return conn

    monkeypatch.setattr(fsx_lustre.AnsibleAWSModule, "client", client)
    yield holder
    for stubber in holder["stubbers"]:
        stubber.assert_no_pending_responses()
        stubber.deactivate()


def _run(capsys, args):
    capsys.readouterr()
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exited:
            fsx_lustre.main()
    return exited.value.code, json.loads(capsys.readouterr().out)


def _list(*file_systems):
    return ("describe_file_systems", {"FileSystems": list(file_systems)}, {})


def _one(fs):
    return ("describe_file_systems", {"FileSystems": [fs]}, {"FileSystemIds": [fs["FileSystemId"]]})


ENIS = ("describe_network_interfaces", {"NetworkInterfaces": [{"NetworkInterfaceId": ENI, "Groups": [{"GroupId": GROUP}]}]}, {"NetworkInterfaceIds": [ENI]})


def test_bad_options_fail_before_any_call(capsys, aws):
    rc, result = _run(capsys, dict(ARGS, storage_capacity=1000, per_unit_storage_throughput=125))
    assert rc == 1
    assert result["msg"].startswith("2 problem(s) with the fsx_lustre options: storage_capacity: got 1000; allowed for PERSISTENT_1: ")
    assert len(result["problems"]) == 2
    assert aws["stubbers"] == []


def test_creates_when_no_file_system_has_the_name(capsys, aws):
    request = trainium_fsx.create_request(dict(ARGS, file_system_type_version="2.15", data_compression_type="LZ4", kms_key_id=None,
                                               weekly_maintenance_start_time=None, data_repository=None))
    aws["plan"]["fsx"] = [_list(OTHER), ("create_file_system", {"FileSystem": existing(Lifecycle="CREATING", NetworkInterfaceIds=[])}, request)]
    rc, result = _run(capsys, dict(ARGS, _ansible_diff=True))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["file_system"]["file_system_id"] == FS_ID
    assert result["file_system"]["lifecycle"] == "CREATING"
    assert result["diff"]["before"] == {}
    assert result["diff"]["after"]["storage_capacity"] == 1200


def test_check_mode_create_calls_nothing_mutating(capsys, aws):
    aws["plan"]["fsx"] = [_list()]
    rc, result = _run(capsys, dict(ARGS, _ansible_check_mode=True, _ansible_diff=True))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["file_system"]["file_system_id"] is None
    assert result["file_system"]["deployment_type"] == "PERSISTENT_1"
    assert result["file_system"]["security_group_ids"] == [GROUP]
    assert result["diff"]["after"]["tags"] == {"Name": NAME, "trainium.eks/cluster": "trn-rehearsal"}


def test_check_mode_create_without_subnet_is_fine(capsys, aws):
    aws["plan"]["fsx"] = [_list()]
    rc, result = _run(capsys, dict({k: v for k, v in ARGS.items() if k != "subnet_id"}, _ansible_check_mode=True))
    assert rc == 0, result
    assert result["changed"] is True and result["file_system"]["subnet_id"] is None


def test_create_without_subnet_fails_naming_it(capsys, aws):
    aws["plan"]["fsx"] = [_list()]
    rc, result = _run(capsys, {k: v for k, v in ARGS.items() if k != "subnet_id"})
    assert rc == 1
    assert result["msg"] == f"subnet_id: required to create FSx for Lustre file system {NAME!r}; got none"


def test_matching_file_system_is_unchanged(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing())]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, ARGS)
    assert rc == 0, result
    assert result["changed"] is False
    assert result["file_system"]["security_group_ids"] == [GROUP]
    assert result["file_system"]["mount_name"] == "abcdef12"


def test_capacity_increase_updates(capsys, aws):
    grown = existing(StorageCapacity=2400)
    aws["plan"]["fsx"] = [
        _list(existing()),
        ("update_file_system", {"FileSystem": grown}, {"FileSystemId": FS_ID, "StorageCapacity": 2400}),
        _one(grown),
    ]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(ARGS, storage_capacity=2400, _ansible_diff=True))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["diff"]["before"]["storage_capacity"] == 1200
    assert result["diff"]["after"]["storage_capacity"] == 2400


def test_check_mode_update_reports_without_calling(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing())]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(ARGS, storage_capacity=2400, tags={"team": "ml"}, _ansible_check_mode=True))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["file_system"]["storage_capacity"] == 2400
    assert result["file_system"]["tags"] == {"Name": NAME, "team": "ml"}


def test_capacity_decrease_fails_naming_both_values(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing(StorageCapacity=2400))]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, ARGS)
    assert rc == 1
    assert result["msg"] == (f"storage_capacity: got 1200; file system {FS_ID} has 2400 GiB and FSx for Lustre cannot shrink; "
                             "allowed: 2400 or more, in multiples of 2400 GiB")


def test_immutable_difference_fails_listing_it(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing())]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(ARGS, security_group_ids=["sg-0fedcba9876543210"]))
    assert rc == 1
    assert result["immutable_differences"] == [f"security_group_ids: ['{GROUP}'] -> ['sg-0fedcba9876543210']"]
    assert "differs in what AWS cannot change in place" in result["msg"]


def test_tags_only_change_uses_tag_calls(capsys, aws):
    aws["plan"]["fsx"] = [
        _list(existing()),
        ("untag_resource", {}, {"ResourceARN": ARN, "TagKeys": ["trainium.eks/cluster"]}),
        ("tag_resource", {}, {"ResourceARN": ARN, "Tags": [{"Key": "team", "Value": "ml"}]}),
        _one(existing()),
    ]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(ARGS, tags={"team": "ml"}))
    assert rc == 0, result
    assert result["changed"] is True


def test_update_of_a_creating_file_system_without_wait_fails(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing(Lifecycle="CREATING"))]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(ARGS, storage_capacity=2400))
    assert rc == 1
    assert "is CREATING; AWS updates it only when AVAILABLE" in result["msg"]


def test_two_file_systems_with_the_name_fail(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing(), dict(existing(), FileSystemId="fs-0000000000000000d"))]
    rc, result = _run(capsys, ARGS)
    assert rc == 1
    assert result["msg"].startswith(f"name: 2 FSx for Lustre file systems have the Name tag {NAME!r}")


def test_failed_file_system_is_reported(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing(Lifecycle="FAILED", FailureDetails={"Message": "no IP addresses left"}))]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, ARGS)
    assert rc == 1
    assert "is FAILED: no IP addresses left" in result["msg"]


def test_absent_missing_is_unchanged(capsys, aws):
    aws["plan"]["fsx"] = [_list(OTHER)]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent", wait=True))
    assert rc == 0, result
    assert result["changed"] is False
    assert result["file_system"] == {}


FINAL_BACKUP = {"SkipFinalBackup": False, "FinalBackupTags": [{"Key": "Name", "Value": NAME}, {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]}


def test_absent_deletes_after_a_final_backup_and_waits(capsys, aws):
    aws["plan"]["fsx"] = [
        _list(existing()),
        ("delete_file_system", {"FileSystemId": FS_ID, "Lifecycle": "DELETING", "LustreResponse": {"FinalBackupId": "backup-0123456789abcdef0"}},
         {"FileSystemId": FS_ID, "LustreConfiguration": FINAL_BACKUP}),
        _one(existing(Lifecycle="DELETING")),
        ("describe_file_systems", ("error", "FileSystemNotFound"), {"FileSystemIds": [FS_ID]}),
    ]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent", wait=True, _ansible_diff=True))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["file_system"]["lifecycle"] == "DELETING"
    assert result["diff"]["before"]["file_system_id"] == FS_ID
    assert result["final_backup_id"] == "backup-0123456789abcdef0"


def test_absent_without_final_backup_when_told(capsys, aws):
    aws["plan"]["fsx"] = [
        _list(existing()),
        ("delete_file_system", {"FileSystemId": FS_ID, "Lifecycle": "DELETING"}, {"FileSystemId": FS_ID, "LustreConfiguration": {"SkipFinalBackup": True}}),
    ]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent", final_backup=False))
    assert rc == 0, result
    assert result["changed"] is True and result["final_backup_id"] is None
    assert not result.get("warnings")


def test_present_sends_the_backup_settings(capsys, aws):
    created = existing(Lifecycle="CREATING")
    created["LustreConfiguration"].update(AutomaticBackupRetentionDays=7, DailyAutomaticBackupStartTime="03:00")
    request = trainium_fsx.create_request(dict(ARGS, file_system_type_version="2.15", data_compression_type="LZ4", kms_key_id=None,
                                               weekly_maintenance_start_time=None, data_repository=None,
                                               automatic_backup_retention_days=7, daily_automatic_backup_start_time="03:00"))
    assert request["LustreConfiguration"]["AutomaticBackupRetentionDays"] == 7
    aws["plan"]["fsx"] = [_list(OTHER), ("create_file_system", {"FileSystem": created}, request)]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(ARGS, automatic_backup_retention_days=7, daily_automatic_backup_start_time="03:00"))
    assert rc == 0, result
    assert result["changed"] is True
    assert (result["file_system"]["automatic_backup_retention_days"], result["file_system"]["daily_automatic_backup_start_time"]) == (7, "03:00")


def test_absent_check_mode_deletes_nothing(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing())]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent", _ansible_check_mode=True))
    assert rc == 0, result
    assert result["changed"] is True


def test_absent_reports_a_file_system_still_deleting(capsys, aws):
    aws["plan"]["fsx"] = [_list(existing(Lifecycle="DELETING"))]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent"))
    assert rc == 0, result
    assert result["changed"] is False
    assert result["file_system"]["lifecycle"] == "DELETING"


def test_aws_error_fails_with_its_code(capsys, aws):
    aws["plan"]["fsx"] = [("describe_file_systems", ("error", "AccessDenied"), {})]
    rc, result = _run(capsys, ARGS)
    assert rc == 1
    assert result["msg"].startswith("Failed to describe FSx file systems")
    assert result["error"]["code"] == "AccessDenied"


def test_absent_waits_out_creating_without_wait_then_deletes(capsys, aws):
    """A run interrupted during creation: the teardown (wait=false) polls CREATING until AVAILABLE, then deletes after a final backup."""
    delete = {"FileSystemId": FS_ID, "LustreConfiguration": FINAL_BACKUP}
    aws["plan"]["fsx"] = [
        _list(existing(Lifecycle="CREATING")),
        _one(existing(Lifecycle="CREATING")),
        _one(existing(Lifecycle="AVAILABLE")),
        # Refused again (an update began meanwhile): the lifecycle read back says busy, so it is tried again.
        ("delete_file_system", ("error", "BadRequest", "Cannot delete file system"), delete),
        _one(existing(Lifecycle="UPDATING")),
        ("delete_file_system", {"FileSystemId": FS_ID, "Lifecycle": "DELETING"}, delete),
    ]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent", wait=False))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["file_system"]["lifecycle"] == "DELETING"


def test_absent_of_a_failed_file_system_deletes_it_without_waiting(capsys, aws):
    aws["plan"]["fsx"] = [
        _list(existing(Lifecycle="FAILED")),
        ("delete_file_system", {"FileSystemId": FS_ID, "Lifecycle": "DELETING"}, {"FileSystemId": FS_ID, "LustreConfiguration": {"SkipFinalBackup": True}}),
    ]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent"))
    assert rc == 0, result
    assert result["changed"] is True
    # A FAILED file system cannot be backed up: deleted without, and the run says so.
    assert result["final_backup_id"] is None
    assert "without a final backup: it is FAILED, not AVAILABLE" in json.dumps(result["warnings"])


def test_absent_other_delete_errors_are_not_retried(capsys, aws):
    delete = {"FileSystemId": FS_ID, "LustreConfiguration": FINAL_BACKUP}
    aws["plan"]["fsx"] = [
        _list(existing()),
        ("delete_file_system", ("error", "BadRequest", "Backups are not supported for this file system"), delete),
        # AVAILABLE read back: not busy, so the refusal stands.
        _one(existing()),
    ]
    aws["plan"]["ec2"] = [ENIS]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent"))
    assert rc == 1
    assert "Backups are not supported" in result["msg"]
