# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The FSx for Lustre decisions (no AWS) and the boto3 calls, checked with botocore's Stubber."""

from __future__ import annotations

import copy

import pytest
from botocore.stub import Stubber

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_fsx as fsx
from ansible_collections.trainium.eks.plugins.module_utils.trainium_fsx import TrainiumFsxError

FS_ID = "fs-0123456789abcdef0"
ARN = f"arn:aws:fsx:us-west-2:123456789012:file-system/{FS_ID}"
SUBNET = "subnet-0123456789abcdef0"
GROUP = "sg-0123456789abcdef0"

PARAMS = {
    "name": "trn-rehearsal-data",
    "state": "present",
    "deployment_type": "PERSISTENT_1",
    "storage_capacity": 1200,
    "per_unit_storage_throughput": 200,
    "subnet_id": SUBNET,
    "security_group_ids": [GROUP],
    "file_system_type_version": "2.15",
    "data_compression_type": "LZ4",
    "kms_key_id": None,
    "weekly_maintenance_start_time": None,
    "automatic_backup_retention_days": None,
    "daily_automatic_backup_start_time": None,
    "data_repository": None,
    "tags": {"trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "trainium.eks"},
    "purge_tags": True,
    "wait": False,
    "wait_timeout": 1800,
}

# A DescribeFileSystems entry as AWS answers for the file system PARAMS create.
EXISTING = {
    "OwnerId": "123456789012",
    "FileSystemId": FS_ID,
    "FileSystemType": "LUSTRE",
    "Lifecycle": "AVAILABLE",
    "StorageCapacity": 1200,
    "StorageType": "SSD",
    "VpcId": "vpc-0123456789abcdef0",
    "SubnetIds": [SUBNET],
    "NetworkInterfaceIds": ["eni-0123456789abcdef0", "eni-0123456789abcdef1"],
    "DNSName": f"{FS_ID}.fsx.us-west-2.amazonaws.com",
    "KmsKeyId": "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "ResourceARN": ARN,
    "FileSystemTypeVersion": "2.15",
    "Tags": [
        {"Key": "Name", "Value": "trn-rehearsal-data"},
        {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"},
        {"Key": "ManagedBy", "Value": "trainium.eks"},
    ],
    "LustreConfiguration": {
        "WeeklyMaintenanceStartTime": "7:03:00",
        "DeploymentType": "PERSISTENT_1",
        "PerUnitStorageThroughput": 200,
        "MountName": "abcdef12",
        "DataCompressionType": "LZ4",
    },
}


def params(**changes):
    result = copy.deepcopy(PARAMS)
    result.update(changes)
    return result


def existing(**changes):
    result = copy.deepcopy(EXISTING)
    result.update(changes)
    return result


# ------------------------------------------------------------------ validation


def test_valid_options_have_no_problems():
    assert fsx.validation_errors(params()) == []
    assert fsx.validation_errors(params(deployment_type="SCRATCH_2", per_unit_storage_throughput=None, storage_capacity=2400)) == []
    assert fsx.validation_errors(params(deployment_type="PERSISTENT_2", per_unit_storage_throughput=1000, storage_capacity=4800)) == []


@pytest.mark.parametrize("capacity", [1200, 2400, 4800, 9600, 24000])
def test_capacity_allowed(capacity):
    assert fsx.validation_errors(params(storage_capacity=capacity)) == []


@pytest.mark.parametrize("capacity", [0, 1000, 1800, 3600, 6000, 1201, 2400 * 1001])
def test_capacity_refused_names_value_and_rule(capacity):
    assert fsx.validation_errors(params(storage_capacity=capacity)) == [
        f"storage_capacity: got {capacity}; allowed for PERSISTENT_1: 1200, 2400 or a multiple of 2400 GiB up to 2400000 "
        "(SSD storage of SCRATCH_2, PERSISTENT_1 and PERSISTENT_2)"
    ]


@pytest.mark.parametrize("deployment_type, good, bad", [
    ("PERSISTENT_1", [50, 100, 200], [125, 250, 1000, 12]),
    ("PERSISTENT_2", [125, 250, 500, 1000], [50, 100, 200]),
])
def test_throughput_per_deployment_type(deployment_type, good, bad):
    for value in good:
        assert fsx.validation_errors(params(deployment_type=deployment_type, per_unit_storage_throughput=value)) == []
    for value in bad:
        (error,) = fsx.validation_errors(params(deployment_type=deployment_type, per_unit_storage_throughput=value))
        assert error.startswith(f"per_unit_storage_throughput: got {value}; allowed for {deployment_type}: ")


def test_throughput_required_for_persistent_and_refused_for_scratch():
    assert fsx.validation_errors(params(per_unit_storage_throughput=None)) == [
        "per_unit_storage_throughput: required for PERSISTENT_1; allowed: 50, 100, 200 (MB/s per TiB)"
    ]
    (error,) = fsx.validation_errors(params(deployment_type="SCRATCH_2", per_unit_storage_throughput=200))
    assert error.startswith("per_unit_storage_throughput: got 200; allowed for SCRATCH_2: none")


def test_kms_key_only_for_persistent():
    assert fsx.validation_errors(params(kms_key_id="alias/fsx")) == []
    (error,) = fsx.validation_errors(params(deployment_type="SCRATCH_2", per_unit_storage_throughput=None, kms_key_id="alias/fsx"))
    assert error.startswith("kms_key_id: got 'alias/fsx' with deployment_type SCRATCH_2; allowed only for PERSISTENT_1, PERSISTENT_2")


def test_lustre_2_10_not_for_persistent_2():
    (error,) = fsx.validation_errors(params(deployment_type="PERSISTENT_2", per_unit_storage_throughput=125, file_system_type_version="2.10"))
    assert error == "file_system_type_version: got '2.10'; allowed for PERSISTENT_2: 2.12, 2.15"


@pytest.mark.parametrize("window, ok", [("7:03:00", True), ("1:23:59", True), ("0:03:00", False), ("8:03:00", False), ("7:24:00", False), ("Sun:03:00", False)])
def test_maintenance_window(window, ok):
    errors = fsx.validation_errors(params(weekly_maintenance_start_time=window))
    assert (errors == []) is ok
    if not ok:
        assert errors[0].startswith(f"weekly_maintenance_start_time: got {window!r}; allowed: d:HH:MM in UTC")


def test_ids_must_look_like_ids():
    errors = fsx.validation_errors(params(subnet_id="my-subnet", security_group_ids=[GROUP, "lustre"]))
    assert errors == [
        "subnet_id: got 'my-subnet'; allowed: a subnet ID such as subnet-0123456789abcdef0",
        "security_group_ids[1]: got 'lustre'; allowed: a security group ID such as sg-0123456789abcdef0",
    ]


def _repository(**changes):
    repository = {"import_path": "s3://my-datasets/wikicorpus", "export_path": None, "auto_import_policy": "NEW_CHANGED_DELETED"}
    repository.update(changes)
    return repository


@pytest.mark.parametrize("path", ["s3://my-datasets", "s3://my-datasets/", "s3://my.datasets-2/a/b"])
def test_data_repository_paths_allowed(path):
    assert fsx.validation_errors(params(data_repository=_repository(import_path=path))) == []


@pytest.mark.parametrize("path", ["my-datasets/x", "s3://My_Bucket/x", "s3://ab", "https://my-datasets/x", "s3://a..b/x"])
def test_data_repository_paths_refused(path):
    (error,) = fsx.validation_errors(params(data_repository=_repository(import_path=path)))
    assert error == f"data_repository.import_path: got {path!r}; allowed: s3://<bucket>[/<prefix>] with a valid S3 bucket name"


def test_export_path_must_be_in_import_bucket():
    (error,) = fsx.validation_errors(params(data_repository=_repository(export_path="s3://other-bucket/out")))
    assert error == "data_repository.export_path: got 's3://other-bucket/out'; allowed: a path in the import bucket (my-datasets)"


def test_data_repository_refused_for_persistent_2():
    (error,) = fsx.validation_errors(params(deployment_type="PERSISTENT_2", per_unit_storage_throughput=250, data_repository=_repository()))
    assert error.startswith("data_repository: not supported with deployment_type PERSISTENT_2")


def test_name_tag_must_not_contradict_name():
    (error,) = fsx.validation_errors(params(tags={"Name": "other"}))
    assert error == "tags.Name: got 'other'; the Name tag is the option name ('trn-rehearsal-data'), leave it out of tags"


def test_absent_checks_only_name():
    assert fsx.validation_errors({"name": "x", "state": "absent", "deployment_type": None, "storage_capacity": 5}) == []
    assert fsx.validation_errors({"name": "", "state": "absent"})[0].startswith("name: got ''")


def test_several_problems_are_all_reported():
    errors = fsx.validation_errors(params(storage_capacity=1000, per_unit_storage_throughput=125, data_compression_type="GZIP"))
    assert [e.split(":")[0] for e in errors] == ["storage_capacity", "per_unit_storage_throughput", "data_compression_type"]


# ------------------------------------------------------------------- creation


def test_create_request_shape():
    assert fsx.create_request(params(weekly_maintenance_start_time="7:03:00", kms_key_id="alias/fsx")) == {
        "FileSystemType": "LUSTRE",
        "FileSystemTypeVersion": "2.15",
        "StorageCapacity": 1200,
        "StorageType": "SSD",
        "SubnetIds": [SUBNET],
        "SecurityGroupIds": [GROUP],
        "KmsKeyId": "alias/fsx",
        "LustreConfiguration": {
            "DeploymentType": "PERSISTENT_1",
            "PerUnitStorageThroughput": 200,
            "DataCompressionType": "LZ4",
            "WeeklyMaintenanceStartTime": "7:03:00",
        },
        "Tags": [
            {"Key": "ManagedBy", "Value": "trainium.eks"},
            {"Key": "Name", "Value": "trn-rehearsal-data"},
            {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"},
        ],
    }


def test_create_request_scratch_with_repository():
    request = fsx.create_request(params(
        deployment_type="SCRATCH_2", per_unit_storage_throughput=None, storage_capacity=2400, tags=None,
        data_repository=_repository(export_path="s3://my-datasets/out"),
    ))
    assert request["LustreConfiguration"] == {
        "DeploymentType": "SCRATCH_2",
        "DataCompressionType": "LZ4",
        "ImportPath": "s3://my-datasets/wikicorpus",
        "ExportPath": "s3://my-datasets/out",
        "AutoImportPolicy": "NEW_CHANGED_DELETED",
    }
    assert request["Tags"] == [{"Key": "Name", "Value": "trn-rehearsal-data"}]
    assert "KmsKeyId" not in request


def test_planned_file_system_looks_like_describe():
    planned = fsx.planned_file_system(params(data_repository=_repository(), deployment_type="SCRATCH_2", per_unit_storage_throughput=None))
    summary = fsx.summarize(planned, [GROUP])
    assert summary["file_system_id"] is None
    assert summary["subnet_id"] == SUBNET
    assert summary["data_repository"] == {"import_path": "s3://my-datasets/wikicorpus", "export_path": None, "auto_import_policy": "NEW_CHANGED_DELETED"}
    assert summary["security_group_ids"] == [GROUP]
    assert summary["tags"]["Name"] == "trn-rehearsal-data"


# -------------------------------------------------------------------- updates


def test_matching_file_system_is_left_alone():
    plan = fsx.plan_update(existing(), params(), [GROUP])
    assert plan == {"errors": [], "immutable": [], "update": {}, "tags_to_set": {}, "tags_to_remove": [], "changed": False}


def test_fields_missing_from_describe_are_not_compared():
    # moto, for one, reports neither network interfaces, version, KMS key nor compression.
    bare = existing()
    for key in ("FileSystemTypeVersion", "KmsKeyId", "NetworkInterfaceIds"):
        bare.pop(key)
    bare["LustreConfiguration"] = {"DeploymentType": "PERSISTENT_1", "PerUnitStorageThroughput": 200}
    plan = fsx.plan_update(bare, params(kms_key_id="alias/other", data_compression_type="NONE", weekly_maintenance_start_time="1:00:00"), None)
    assert not plan["changed"] and plan["immutable"] == [] and plan["errors"] == []


def test_capacity_increase_is_an_update():
    plan = fsx.plan_update(existing(), params(storage_capacity=2400), [GROUP])
    assert plan["update"] == {"StorageCapacity": 2400}
    assert fsx.apply_plan(existing(), plan)["StorageCapacity"] == 2400


def test_capacity_decrease_is_an_error_naming_both_values():
    plan = fsx.plan_update(existing(StorageCapacity=4800), params(storage_capacity=2400), [GROUP])
    assert plan["update"] == {}
    assert plan["errors"] == [
        f"storage_capacity: got 2400; file system {FS_ID} has 4800 GiB and FSx for Lustre cannot shrink; "
        "allowed: 4800 or more, in multiples of 2400 GiB"
    ]


def test_capacity_increase_to_1200_multiple_is_an_error():
    plan = fsx.plan_update(existing(StorageCapacity=1200), params(storage_capacity=3600), [GROUP])
    assert plan["errors"][0].startswith("storage_capacity: got 3600; an increase of file system")


def test_updatable_lustre_settings():
    plan = fsx.plan_update(existing(), params(per_unit_storage_throughput=100, data_compression_type="NONE", weekly_maintenance_start_time="1:05:00"), [GROUP])
    assert plan["update"] == {"LustreConfiguration": {"PerUnitStorageThroughput": 100, "DataCompressionType": "NONE", "WeeklyMaintenanceStartTime": "1:05:00"}}
    after = fsx.summarize(fsx.apply_plan(existing(), plan))
    assert (after["per_unit_storage_throughput"], after["data_compression_type"], after["weekly_maintenance_start_time"]) == (100, "NONE", "1:05:00")


def test_immutable_differences_are_listed():
    current = existing()
    plan = fsx.plan_update(current, params(
        deployment_type="PERSISTENT_2", per_unit_storage_throughput=250, subnet_id="subnet-0fedcba9876543210",
        security_group_ids=["sg-0fedcba9876543210"], kms_key_id="ffffffff-12ab-34cd-56ef-1234567890ab", file_system_type_version="2.12",
    ), [GROUP])
    assert plan["immutable"] == [
        "deployment_type: PERSISTENT_1 -> PERSISTENT_2",
        f"subnet_id: {SUBNET} -> subnet-0fedcba9876543210",
        f"security_group_ids: ['{GROUP}'] -> ['sg-0fedcba9876543210']",
        f"kms_key_id: {current['KmsKeyId']} -> ffffffff-12ab-34cd-56ef-1234567890ab",
        "file_system_type_version: 2.15 -> 2.12",
    ]


def test_kms_key_id_matches_its_arn():
    plan = fsx.plan_update(existing(), params(kms_key_id="1234abcd-12ab-34cd-56ef-1234567890ab"), [GROUP])
    assert plan["immutable"] == []


def test_security_groups_compared_as_sets_and_skipped_when_unknown():
    assert fsx.plan_update(existing(), params(security_group_ids=[GROUP, GROUP]), [GROUP])["immutable"] == []
    assert fsx.plan_update(existing(), params(security_group_ids=["sg-0fedcba9876543210"]), None)["immutable"] == []


def test_data_repository_paths_are_immutable_policy_is_not():
    current = existing()
    current["LustreConfiguration"]["DataRepositoryConfiguration"] = {
        "Lifecycle": "AVAILABLE", "ImportPath": "s3://my-datasets/wikicorpus", "ExportPath": "s3://my-datasets/out", "AutoImportPolicy": "NONE",
    }
    plan = fsx.plan_update(current, params(data_repository=_repository()), [GROUP])
    assert plan["immutable"] == []
    assert plan["update"] == {"LustreConfiguration": {"AutoImportPolicy": "NEW_CHANGED_DELETED"}}
    after = fsx.summarize(fsx.apply_plan(current, plan))
    assert after["data_repository"]["auto_import_policy"] == "NEW_CHANGED_DELETED"
    plan = fsx.plan_update(current, params(data_repository=_repository(import_path="s3://my-datasets/other")), [GROUP])
    assert plan["immutable"] == ["data_repository.import_path: s3://my-datasets/wikicorpus -> s3://my-datasets/other"]


def test_adding_a_data_repository_later_is_immutable():
    plan = fsx.plan_update(existing(), params(data_repository=_repository()), [GROUP])
    assert plan["immutable"] == ["data_repository.import_path: none -> s3://my-datasets/wikicorpus"]


def test_tags_added_changed_and_purged_but_name_kept():
    current = existing(Tags=EXISTING["Tags"] + [{"Key": "old", "Value": "x"}])
    plan = fsx.plan_update(current, params(tags={"trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "someone", "team": "ml"}), [GROUP])
    assert plan["tags_to_set"] == {"ManagedBy": "someone", "team": "ml"}
    assert plan["tags_to_remove"] == ["old"] and plan["changed"] is True
    assert plan["update"] == {}
    assert fsx.summarize(fsx.apply_plan(current, plan))["tags"] == {
        "Name": "trn-rehearsal-data", "trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "someone", "team": "ml",
    }


def test_tags_left_alone_without_purge_or_without_tags_option():
    current = existing(Tags=EXISTING["Tags"] + [{"Key": "old", "Value": "x"}])
    assert fsx.plan_update(current, params(purge_tags=False), [GROUP])["tags_to_remove"] == []
    plan = fsx.plan_update(current, params(tags=None), [GROUP])
    assert (plan["tags_to_set"], plan["tags_to_remove"], plan["changed"]) == ({}, [], False)


def test_find_by_name_skips_other_names_types_and_separates_deleting():
    mine = existing()
    deleting = existing(FileSystemId="fs-0000000000000000d", Lifecycle="DELETING")
    other = existing(FileSystemId="fs-0000000000000000e", Tags=[{"Key": "Name", "Value": "other"}])
    windows = existing(FileSystemId="fs-0000000000000000f", FileSystemType="WINDOWS")
    live, gone = fsx.find_by_name([other, deleting, windows, mine], "trn-rehearsal-data")
    assert [fs["FileSystemId"] for fs in live] == [FS_ID]
    assert [fs["FileSystemId"] for fs in gone] == ["fs-0000000000000000d"]


def test_summary_fields():
    summary = fsx.summarize(existing(), [GROUP])
    assert summary["file_system_id"] == FS_ID
    assert summary["mount_name"] == "abcdef12"
    assert summary["dns_name"] == f"{FS_ID}.fsx.us-west-2.amazonaws.com"
    assert summary["subnet_id"] == SUBNET and summary["subnet_ids"] == [SUBNET]
    assert summary["security_group_ids"] == [GROUP]
    assert summary["deployment_type"] == "PERSISTENT_1" and summary["storage_capacity"] == 1200
    assert summary["data_repository"] is None
    assert fsx.summarize(None) == {}


def test_delete_request_skips_final_backup_only_for_persistent():
    assert fsx.delete_request(existing()) == {"FileSystemId": FS_ID, "LustreConfiguration": {"SkipFinalBackup": True}}
    scratch = existing()
    scratch["LustreConfiguration"]["DeploymentType"] = "SCRATCH_2"
    assert fsx.delete_request(scratch) == {"FileSystemId": FS_ID}
    assert fsx.delete_request(scratch, final_backup=True) == {"FileSystemId": FS_ID}


FS_TAGS = [{"Key": "ManagedBy", "Value": "trainium.eks"}, {"Key": "Name", "Value": "trn-rehearsal-data"},
           {"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]


def test_final_backup_of_an_available_persistent_file_system_carries_its_tags():
    fs = existing()
    fs["Tags"].append({"Key": "aws:cloudformation:stack-name", "Value": "not ours"})
    assert fsx.final_backup_possible(fs)
    assert fsx.delete_request(fs, final_backup=True) == {
        "FileSystemId": FS_ID, "LustreConfiguration": {"SkipFinalBackup": False, "FinalBackupTags": FS_TAGS}}
    assert fsx.delete_request(fs, final_backup=True, tags={"keep": "yes"}) == {
        "FileSystemId": FS_ID, "LustreConfiguration": {"SkipFinalBackup": False, "FinalBackupTags": [{"Key": "keep", "Value": "yes"}]}}
    many = {f"k{i:02d}": "v" for i in range(60)}
    assert len(fsx.final_backup_tags(fs, many)) == fsx.MAX_BACKUP_TAGS


@pytest.mark.parametrize("why", ["failed", "data repository"])
def test_no_final_backup_where_fsx_cannot_take_one(why):
    fs = existing(Lifecycle="FAILED") if why == "failed" else existing()
    if why == "data repository":
        fs["LustreConfiguration"]["DataRepositoryConfiguration"] = {"ImportPath": "s3://bucket", "Lifecycle": "AVAILABLE"}
    assert not fsx.final_backup_possible(fs)
    assert fsx.delete_request(fs, final_backup=True) == {"FileSystemId": FS_ID, "LustreConfiguration": {"SkipFinalBackup": True}}


def test_final_backup_id_comes_from_the_lustre_response():
    assert fsx.final_backup_id({"FileSystemId": FS_ID, "LustreResponse": {"FinalBackupId": "backup-0123456789abcdef0"}}) == "backup-0123456789abcdef0"
    assert fsx.final_backup_id({"FileSystemId": FS_ID, "LustreResponse": {}}) is None
    assert fsx.final_backup_id({"FileSystemId": FS_ID}) is None
    assert fsx.final_backup_id(False) is None


# ------------------------------------------------------------------ automatic backups


def test_backups_are_requested_for_persistent_types_only():
    lustre = fsx.create_request(params(automatic_backup_retention_days=7, daily_automatic_backup_start_time="03:00"))["LustreConfiguration"]
    assert (lustre["AutomaticBackupRetentionDays"], lustre["DailyAutomaticBackupStartTime"]) == (7, "03:00")
    off = fsx.create_request(params(automatic_backup_retention_days=0, daily_automatic_backup_start_time="03:00"))["LustreConfiguration"]
    assert off["AutomaticBackupRetentionDays"] == 0 and "DailyAutomaticBackupStartTime" not in off
    unset = fsx.create_request(params())["LustreConfiguration"]
    assert "AutomaticBackupRetentionDays" not in unset
    scratch = fsx.create_request(params(deployment_type="SCRATCH_2", per_unit_storage_throughput=None, automatic_backup_retention_days=0))
    assert "AutomaticBackupRetentionDays" not in scratch["LustreConfiguration"]
    linked = fsx.create_request(params(automatic_backup_retention_days=0, data_repository={"import_path": "s3://bucket", "auto_import_policy": "NONE"}))
    assert "AutomaticBackupRetentionDays" not in linked["LustreConfiguration"]
    planned = fsx.summarize(fsx.planned_file_system(params(automatic_backup_retention_days=7)))
    assert planned["automatic_backup_retention_days"] == 7


@pytest.mark.parametrize("changes, error", [
    ({"automatic_backup_retention_days": 91}, "automatic_backup_retention_days: got 91; allowed: 0 (no automatic backups) to 90 days"),
    ({"automatic_backup_retention_days": -1}, "automatic_backup_retention_days: got -1; allowed: 0 (no automatic backups) to 90 days"),
    ({"automatic_backup_retention_days": 7, "deployment_type": "SCRATCH_2", "per_unit_storage_throughput": None},
     "automatic_backup_retention_days: got 7 with deployment_type SCRATCH_2 (FSx keeps no backups of scratch file systems); allowed: 0 or unset"),
    ({"automatic_backup_retention_days": 7, "data_repository": {"import_path": "s3://bucket", "auto_import_policy": "NONE"}},
     "automatic_backup_retention_days: got 7 with data_repository (FSx keeps no backups of a file system linked to an S3 data repository); "
     "allowed: 0 or unset"),
    ({"daily_automatic_backup_start_time": "3:00"}, "daily_automatic_backup_start_time: got '3:00'; allowed: HH:MM in UTC, for example 03:00"),
    ({"daily_automatic_backup_start_time": "24:00"}, "daily_automatic_backup_start_time: got '24:00'; allowed: HH:MM in UTC, for example 03:00"),
    ({"daily_automatic_backup_start_time": "03:00", "deployment_type": "SCRATCH_2", "per_unit_storage_throughput": None},
     "daily_automatic_backup_start_time: got '03:00' with deployment_type SCRATCH_2 (FSx keeps no backups of scratch file systems); allowed: unset"),
])
def test_backup_options_refused(changes, error):
    assert fsx.validation_errors(params(**changes)) == [error]


def test_backup_options_allowed():
    assert fsx.validation_errors(params(automatic_backup_retention_days=90, daily_automatic_backup_start_time="23:59")) == []
    assert fsx.validation_errors(params(automatic_backup_retention_days=0)) == []
    assert fsx.validation_errors(params(deployment_type="SCRATCH_2", per_unit_storage_throughput=None, automatic_backup_retention_days=0)) == []


def test_backup_retention_and_window_are_updated_in_place():
    fs = existing()
    fs["LustreConfiguration"]["AutomaticBackupRetentionDays"] = 0
    plan = fsx.plan_update(fs, params(automatic_backup_retention_days=7, daily_automatic_backup_start_time="03:00"), [GROUP])
    assert plan["update"] == {"LustreConfiguration": {"AutomaticBackupRetentionDays": 7, "DailyAutomaticBackupStartTime": "03:00"}}
    assert plan["changed"] and not plan["immutable"]
    after = fsx.summarize(fsx.apply_plan(fs, plan))
    assert (after["automatic_backup_retention_days"], after["daily_automatic_backup_start_time"]) == (7, "03:00")

    fs["LustreConfiguration"].update(AutomaticBackupRetentionDays=7, DailyAutomaticBackupStartTime="05:30")
    assert not fsx.plan_update(fs, params(automatic_backup_retention_days=7), [GROUP])["changed"]  # AWS's window kept
    assert fsx.plan_update(fs, params(automatic_backup_retention_days=7, daily_automatic_backup_start_time="03:00"), [GROUP])["update"] == {
        "LustreConfiguration": {"DailyAutomaticBackupStartTime": "03:00"}}
    assert fsx.plan_update(fs, params(automatic_backup_retention_days=0, daily_automatic_backup_start_time="03:00"), [GROUP])["update"] == {
        "LustreConfiguration": {"AutomaticBackupRetentionDays": 0}}


def test_backup_settings_left_alone_where_unknown_or_unsupported():
    fs = existing()  # reports no AutomaticBackupRetentionDays
    assert not fsx.plan_update(fs, params(automatic_backup_retention_days=7), [GROUP])["changed"]
    linked = existing()
    linked["LustreConfiguration"].update(AutomaticBackupRetentionDays=0, DataRepositoryConfiguration={"ImportPath": "s3://bucket"})
    assert not fsx.plan_update(linked, params(automatic_backup_retention_days=7), [GROUP])["update"]


# ------------------------------------------------------------------ AWS calls


@pytest.fixture
def client(boto3_session, sleeps):  # pylint: disable=unused-argument,redefined-outer-name
    conn = boto3_session.client("fsx", endpoint_url="http://127.0.0.1:1")
    with Stubber(conn) as stubber:
        yield conn, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def ec2(boto3_session, sleeps):  # pylint: disable=unused-argument,redefined-outer-name
    conn = boto3_session.client("ec2", endpoint_url="http://127.0.0.1:1")
    with Stubber(conn) as stubber:
        yield conn, stubber
        stubber.assert_no_pending_responses()


def test_create_sends_the_request(client):
    conn, stubber = client
    request = fsx.create_request(params())
    stubber.add_response("create_file_system", {"FileSystem": existing(Lifecycle="CREATING")}, request)
    assert fsx.create_file_system(conn, request)["Lifecycle"] == "CREATING"


def test_update_sends_id_and_changes(client):
    conn, stubber = client
    stubber.add_response("update_file_system", {"FileSystem": existing(StorageCapacity=2400)},
                         {"FileSystemId": FS_ID, "StorageCapacity": 2400, "LustreConfiguration": {"PerUnitStorageThroughput": 100}})
    fs = fsx.update_file_system(conn, FS_ID, {"StorageCapacity": 2400, "LustreConfiguration": {"PerUnitStorageThroughput": 100}})
    assert fs["StorageCapacity"] == 2400


def test_tags_are_set_and_removed_by_arn(client):
    conn, stubber = client
    stubber.add_response("untag_resource", {}, {"ResourceARN": ARN, "TagKeys": ["old"]})
    stubber.add_response("tag_resource", {}, {"ResourceARN": ARN, "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]})
    common.update_tags(conn, ARN, {"b": "2", "a": "1"}, ["old"])


def test_describe_one_missing_is_none(client):
    conn, stubber = client
    stubber.add_client_error("describe_file_systems", "FileSystemNotFound", "File system 'fs' does not exist.", 400, {"FileSystemIds": [FS_ID]})
    stubber.add_response("describe_file_systems", {"FileSystems": []}, {"FileSystemIds": [FS_ID]})
    assert fsx.describe_file_system(conn, FS_ID) is None
    assert fsx.describe_file_system(conn, FS_ID) is None


def test_describe_all_follows_pages(client):
    conn, stubber = client
    stubber.add_response("describe_file_systems", {"FileSystems": [existing()], "NextToken": "t1"}, {})
    stubber.add_response("describe_file_systems", {"FileSystems": [existing(FileSystemId="fs-0000000000000000e")]}, {"NextToken": "t1"})
    assert [fs["FileSystemId"] for fs in fsx.describe_file_systems(conn)] == [FS_ID, "fs-0000000000000000e"]


def test_access_denied_is_a_trainium_fsx_error(client):
    conn, stubber = client
    stubber.add_client_error("describe_file_systems", "AccessDenied", "not allowed", 403, {})
    with pytest.raises(TrainiumFsxError) as raised:
        fsx.describe_file_systems(conn)
    assert raised.value.message == "Failed to describe FSx file systems"


def test_delete_sends_skip_final_backup_and_tolerates_missing(client):
    conn, stubber = client
    stubber.add_response("delete_file_system", {"FileSystemId": FS_ID, "Lifecycle": "DELETING"},
                         {"FileSystemId": FS_ID, "LustreConfiguration": {"SkipFinalBackup": True}})
    stubber.add_client_error("delete_file_system", "FileSystemNotFound", "gone", 400,
                             {"FileSystemId": FS_ID, "LustreConfiguration": {"SkipFinalBackup": True}})
    assert fsx.delete_file_system(conn, existing())["Lifecycle"] == "DELETING"
    assert fsx.delete_file_system(conn, existing()) is False


def test_security_groups_come_from_network_interfaces(ec2):
    conn, stubber = ec2
    interfaces = [
        {"NetworkInterfaceId": "eni-0123456789abcdef0", "Groups": [{"GroupId": GROUP, "GroupName": "lustre"}]},
        {"NetworkInterfaceId": "eni-0123456789abcdef1", "Groups": [{"GroupId": GROUP, "GroupName": "lustre"}, {"GroupId": "sg-0fedcba9876543210"}]},
    ]
    stubber.add_response("describe_network_interfaces", {"NetworkInterfaces": interfaces},
                         {"NetworkInterfaceIds": ["eni-0123456789abcdef0", "eni-0123456789abcdef1"]})
    assert fsx.security_groups_of(conn, EXISTING["NetworkInterfaceIds"]) == [GROUP, "sg-0fedcba9876543210"]
    assert fsx.security_groups_of(conn, []) is None


def test_wait_until_available(client, fake_clock):
    conn, stubber = client
    for lifecycle in ("CREATING", "CREATING", "AVAILABLE"):
        stubber.add_response("describe_file_systems", {"FileSystems": [existing(Lifecycle=lifecycle)]}, {"FileSystemIds": [FS_ID]})
    clock = fake_clock
    fs = fsx.wait_for(conn, FS_ID, 60, delay=5, clock=clock, sleep=clock.sleep)
    assert fs["Lifecycle"] == "AVAILABLE"
    assert clock.slept == [5, 5]


def test_wait_until_gone(client, fake_clock):
    conn, stubber = client
    stubber.add_response("describe_file_systems", {"FileSystems": [existing(Lifecycle="DELETING")]}, {"FileSystemIds": [FS_ID]})
    stubber.add_client_error("describe_file_systems", "FileSystemNotFound", "gone", 400, {"FileSystemIds": [FS_ID]})
    clock = fake_clock
    assert fsx.wait_for(conn, FS_ID, 60, gone=True, clock=clock, sleep=clock.sleep) is None


def test_wait_fails_on_failed_and_on_timeout(client, fake_clock):
    conn, stubber = client
    failed = existing(Lifecycle="FAILED", FailureDetails={"Message": "subnet has no free addresses"})
    stubber.add_response("describe_file_systems", {"FileSystems": [failed]}, {"FileSystemIds": [FS_ID]})
    clock = fake_clock
    with pytest.raises(TrainiumFsxError, match="is FAILED: subnet has no free addresses"):
        fsx.wait_for(conn, FS_ID, 60, clock=clock, sleep=clock.sleep)
    for lifecycle in ("CREATING", "CREATING", "CREATING"):
        stubber.add_response("describe_file_systems", {"FileSystems": [existing(Lifecycle=lifecycle)]}, {"FileSystemIds": [FS_ID]})
    with pytest.raises(TrainiumFsxError, match=r"Timed out after 10 s waiting for FSx file system .* to become AVAILABLE \(last state: CREATING\)"):
        fsx.wait_for(conn, FS_ID, 10, delay=5, clock=clock, sleep=clock.sleep)


# ------------------------------------ teardown of a file system still being created


def test_creating_file_system_is_polled_until_available_then_deleted(client):
    conn, stubber = client
    for lifecycle in ("CREATING", "CREATING", "AVAILABLE"):
        stubber.add_response("describe_file_systems", {"FileSystems": [{"FileSystemId": FS_ID, "Lifecycle": lifecycle}]}, {"FileSystemIds": [FS_ID]})
    stubber.add_response("delete_file_system", {"FileSystemId": FS_ID, "Lifecycle": "DELETING"}, {"FileSystemId": FS_ID})
    slept = []
    fs = fsx.wait_until_settled(conn, FS_ID, 600, delay=15, clock=lambda: 0, sleep=slept.append)
    assert fs["Lifecycle"] == "AVAILABLE" and slept == [15, 15]
    assert fsx.delete_file_system(conn, fs, timeout=600, sleep=pytest.fail)["Lifecycle"] == "DELETING"


@pytest.mark.parametrize("lifecycle", ["AVAILABLE", "FAILED", "MISCONFIGURED", "DELETING"])
def test_settled_lifecycles_end_the_wait_at_once(client, lifecycle):
    conn, stubber = client
    stubber.add_response("describe_file_systems", {"FileSystems": [{"FileSystemId": FS_ID, "Lifecycle": lifecycle}]}, {"FileSystemIds": [FS_ID]})
    assert fsx.wait_until_settled(conn, FS_ID, 600, clock=lambda: 0, sleep=pytest.fail)["Lifecycle"] == lifecycle


def test_wait_until_settled_times_out_naming_the_lifecycle(client):
    conn, stubber = client
    stubber.add_response("describe_file_systems", {"FileSystems": [{"FileSystemId": FS_ID, "Lifecycle": "UPDATING"}]}, {"FileSystemIds": [FS_ID]})
    times = iter([0, 601])
    with pytest.raises(TrainiumFsxError, match=r"finish CREATING or UPDATING before deleting it .*\(last state: UPDATING\)"):
        fsx.wait_until_settled(conn, FS_ID, 600, clock=lambda: next(times), sleep=pytest.fail)


def _lifecycle(stubber, lifecycle):
    stubber.add_response("describe_file_systems", {"FileSystems": [{"FileSystemId": FS_ID, "Lifecycle": lifecycle}]}, {"FileSystemIds": [FS_ID]})


@pytest.mark.parametrize("code, message, lifecycle", [
    # FSx documents no code or message for "busy": the lifecycle read back decides, whatever the text says.
    ("BadRequest", "Something went wrong", "CREATING"),
    ("BadRequest", "The request was refused", "UPDATING"),
    ("ResourceInUseException", "in use", None),
])
def test_busy_delete_is_retried_with_backoff(client, code, message, lifecycle):
    conn, stubber = client
    for _attempt in range(2):
        stubber.add_client_error("delete_file_system", code, message, expected_params={"FileSystemId": FS_ID})
        if lifecycle:
            _lifecycle(stubber, lifecycle)
    stubber.add_response("delete_file_system", {"FileSystemId": FS_ID, "Lifecycle": "DELETING"}, {"FileSystemId": FS_ID})
    slept = []
    assert fsx.delete_file_system(conn, {"FileSystemId": FS_ID}, timeout=600, clock=lambda: 0, sleep=slept.append)["Lifecycle"] == "DELETING"
    assert slept == [5, 10]


def test_busy_delete_retries_stop_at_the_timeout(client):
    conn, stubber = client
    for _attempt in range(2):
        stubber.add_client_error("delete_file_system", "BadRequest", "refused", expected_params={"FileSystemId": FS_ID})
        _lifecycle(stubber, "CREATING")
    times = iter([0, 1, 8])
    slept = []
    with pytest.raises(TrainiumFsxError, match="delete the FSx for Lustre file system"):
        fsx.delete_file_system(conn, {"FileSystemId": FS_ID}, timeout=7, clock=lambda: next(times), sleep=slept.append)
    assert slept == [5]


@pytest.mark.parametrize("message", ["Backups are not supported", "File system is still CREATING, in progress"])
def test_a_bad_request_on_a_settled_file_system_is_not_retried(client, message):
    """Even a message that reads like "busy": the file system is AVAILABLE, so the refusal is something else."""
    conn, stubber = client
    stubber.add_client_error("delete_file_system", "BadRequest", message, expected_params={"FileSystemId": FS_ID})
    _lifecycle(stubber, "AVAILABLE")
    with pytest.raises(TrainiumFsxError, match=message.split(",")[0]):
        fsx.delete_file_system(conn, {"FileSystemId": FS_ID}, timeout=600, clock=lambda: 0, sleep=pytest.fail)


# ------------------------------------------------------------ restore from a backup

def _backup(backup_id, created, name="trn-rehearsal-data", lifecycle="AVAILABLE", deployment_type="PERSISTENT_1", capacity=1200):
    return {"BackupId": backup_id, "Lifecycle": lifecycle, "CreationTime": created, "Tags": [{"Key": "Name", "Value": name}],
            "FileSystem": {"FileSystemType": "LUSTRE", "StorageCapacity": capacity, "LustreConfiguration": {"DeploymentType": deployment_type}}}


def test_restore_from_backup_must_be_latest_or_a_backup_id():
    assert fsx.validation_errors(params(restore_from_backup="latest")) == []
    assert fsx.validation_errors(params(restore_from_backup="backup-0123456789abcdef0")) == []
    assert fsx.validation_errors(params(restore_from_backup="newest")) == [
        "restore_from_backup: got 'newest'; allowed: empty (a new, empty file system), 'latest' (the newest backup of this file system)"
        " or a backup ID (backup-...)"]
    with_s3 = fsx.validation_errors(params(deployment_type="SCRATCH_2", per_unit_storage_throughput=None, restore_from_backup="latest",
                                           data_repository={"import_path": "s3://bucket", "auto_import_policy": "NEW"}))
    assert any(error.startswith("restore_from_backup: set with data_repository") for error in with_s3)


def test_newest_backup_takes_the_newest_available_backup_of_this_name():
    backups = [_backup("backup-00000001", "2026-11-01T00:00:00"), _backup("backup-00000002", "2026-11-20T00:00:00"),
               _backup("backup-00000003", "2026-11-25T00:00:00", lifecycle="CREATING"),
               _backup("backup-00000004", "2026-11-29T00:00:00", name="other-data")]
    assert fsx.newest_backup(backups, "trn-rehearsal-data")["BackupId"] == "backup-00000002"
    assert fsx.newest_backup(backups, "missing-data") is None
    # Only backups that carry the deployment's tags too, when asked.
    assert fsx.newest_backup(backups, "trn-rehearsal-data", {"trainium.eks/cluster": "trn-rehearsal"}) is None
    tagged = dict(backups[0], Tags=backups[0]["Tags"] + [{"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}])
    assert fsx.newest_backup(backups + [tagged], "trn-rehearsal-data", {"trainium.eks/cluster": "trn-rehearsal"}) is tagged


def test_restore_problem_names_deployment_type_and_capacity():
    assert fsx.restore_problem(_backup("backup-00000001", "t"), params()) is None
    assert "is of a PERSISTENT_2 file system, deployment_type is PERSISTENT_1" in fsx.restore_problem(
        _backup("backup-00000001", "t", deployment_type="PERSISTENT_2"), params())
    assert fsx.restore_problem(_backup("backup-00000001", "t", capacity=2400), params()) == (
        "storage_capacity: got 1200 GiB; allowed: at least the 2400 GiB of backup backup-00000001 (restore_from_backup)")
    assert "is CREATING; allowed: an AVAILABLE backup" in fsx.restore_problem(_backup("backup-00000001", "t", lifecycle="CREATING"), params())


def test_restore_request_keeps_what_create_file_system_from_backup_takes():
    request = fsx.restore_request(params(weekly_maintenance_start_time="7:03:00", automatic_backup_retention_days=7), "backup-00000001")
    assert request["BackupId"] == "backup-00000001" and "FileSystemType" not in request
    assert request["LustreConfiguration"] == {"DataCompressionType": "LZ4", "PerUnitStorageThroughput": 200,
                                              "WeeklyMaintenanceStartTime": "7:03:00", "AutomaticBackupRetentionDays": 7}
    assert request["SubnetIds"] == [SUBNET] and request["SecurityGroupIds"] == [GROUP]
