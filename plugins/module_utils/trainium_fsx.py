# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""FSx for Lustre behind trainium.eks.fsx_lustre.

Two halves:

* pure functions (no AWS) that validate the options, build the
  CreateFileSystem request and decide what an existing file system needs
  (``plan_update``): unit tests cover them without boto3;
* boto3 calls, each retried with jittered backoff and turning botocore errors
  into ``TrainiumFsxError`` (an ``AnsibleAWSError``) that the module reports
  with ``fail_json_aws_error``.

AWS rules encoded here (FSx API reference, CreateFileSystem /
UpdateFileSystem, FSx for Lustre user guide):

* SSD storage (SCRATCH_2, PERSISTENT_1, PERSISTENT_2): 1200 GiB, 2400 GiB or a
  multiple of 2400 GiB at creation; an increase must be a multiple of 2400 GiB
  greater than the current capacity; capacity never shrinks.
* Throughput per unit of storage: PERSISTENT_1 50/100/200, PERSISTENT_2
  125/250/500/1000 MB/s/TiB, none for SCRATCH_2; persistent file systems may
  change it later.
* KmsKeyId only for persistent types (scratch data is encrypted with an
  FSx-managed key); Lustre 2.10 only for SCRATCH_2 and PERSISTENT_1.
* ImportPath / ExportPath (an S3 data repository set at creation) are not
  supported on PERSISTENT_2, which links S3 through data repository
  associations instead.
* Backups (automatic daily ones, AutomaticBackupRetentionDays 0-90 with a
  DailyAutomaticBackupStartTime HH:MM in UTC, and the final backup of
  DeleteFileSystem, LustreConfiguration.SkipFinalBackup false) exist only
  for persistent file systems that are not linked to an S3 data repository
  (CreateBackup: "A Persistent deployment type; are not linked to a data
  repository"). DeleteFileSystem takes no final backup unless asked
  (SkipFinalBackup defaults to true); the final backup outlives the file
  system, automatic backups do not.
"""

from __future__ import annotations

import re

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry
from ansible_collections.amazon.aws.plugins.module_utils.tagging import boto3_tag_list_to_ansible_dict

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_limits as limits

# The one definition lives in trainium_common; these names stay for callers of this file.
DEPLOYMENT_TYPES = common.FSX_DEPLOYMENT_TYPES
THROUGHPUTS = common.FSX_THROUGHPUTS
PERSISTENT_TYPES = ("PERSISTENT_1", "PERSISTENT_2")
LUSTRE_VERSIONS = {"SCRATCH_2": ("2.10", "2.12", "2.15"), "PERSISTENT_1": ("2.10", "2.12", "2.15"), "PERSISTENT_2": ("2.12", "2.15")}
COMPRESSION_TYPES = ("NONE", "LZ4")
AUTO_IMPORT_POLICIES = ("NONE", "NEW", "NEW_CHANGED", "NEW_CHANGED_DELETED")
CAPACITY_STEP = limits.FSX_CAPACITY_STEP

# Lifecycle values of DescribeFileSystems.
AVAILABLE = "AVAILABLE"
DELETING = "DELETING"
FAILED = "FAILED"
# Lifecycles in which FSx refuses DeleteFileSystem.
BUSY_STATES = ("CREATING", "UPDATING")

_MAINTENANCE = re.compile(r"^[1-7]:([01][0-9]|2[0-3]):[0-5][0-9]$")
_BACKUP_START = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
MAX_BACKUP_RETENTION_DAYS = 90
# FinalBackupTags takes at most this many tags.
MAX_BACKUP_TAGS = 50
_S3_PATH = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?P<prefix>/[^\s]*)?$")
_SUBNET = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SECURITY_GROUP = re.compile(r"^sg-[0-9a-f]{8,17}$")
_NAME = re.compile(r"^[^\s].{0,254}$")

CAPACITY_RULE = limits.FSX_CAPACITY_RULE


class TrainiumFsxError(common.TrainiumAWSError):
    pass


FsxErrorHandler = common.error_handler(TrainiumFsxError, "FileSystemNotFound", "InvalidNetworkInterfaceID.NotFound")
FsxBackupErrorHandler = common.error_handler(TrainiumFsxError, "BackupNotFound")


# ---------------------------------------------------------------- validation


def _describe_allowed(values):
    return ", ".join(str(v) for v in values)


def validation_errors(params):
    """Problems with the module options, one message each (option, value, what is allowed).

    Runs before any AWS call. ``params`` is the module's params dict.
    """
    errors = []
    name = params.get("name")
    if not name or not _NAME.match(name):
        errors.append(f"name: got {name!r}; allowed: 1 to 255 characters, not starting with a blank (it becomes the Name tag)")
    tags = params.get("tags") or {}
    if "Name" in tags and tags["Name"] != name:
        errors.append(f"tags.Name: got {tags['Name']!r}; the Name tag is the option name ({name!r}), leave it out of tags")
    if params.get("wait_timeout") is not None and params["wait_timeout"] < 1:
        errors.append(f"wait_timeout: got {params['wait_timeout']}; allowed: a number of seconds of at least 1")
    if params.get("state", "present") != "present":
        return errors
    restore = params.get("restore_from_backup")
    if restore and restore != LATEST_BACKUP and not BACKUP_ID_RE.match(restore):
        errors.append(f"restore_from_backup: got {restore!r}; allowed: empty (a new, empty file system), "
                      f"{LATEST_BACKUP!r} (the newest backup of this file system) or a backup ID (backup-...)")
    if restore and params.get("data_repository"):
        errors.append("restore_from_backup: set with data_repository; allowed: one of them (FSx keeps no backups of a file system"
                      " linked to an S3 data repository)")

    deployment_type = params.get("deployment_type")
    if deployment_type not in DEPLOYMENT_TYPES:
        errors.append(f"deployment_type: got {deployment_type!r}; allowed: {_describe_allowed(DEPLOYMENT_TYPES)}")
        return errors

    capacity = params.get("storage_capacity")
    if capacity is None:
        errors.append(f"storage_capacity: required with state=present; allowed: {CAPACITY_RULE}")
    elif not limits.fsx_capacity_ok(capacity):
        errors.append(f"storage_capacity: got {capacity}; allowed for {deployment_type}: {CAPACITY_RULE}")

    throughput = params.get("per_unit_storage_throughput")
    allowed_throughput = THROUGHPUTS[deployment_type]
    if not allowed_throughput:
        if throughput is not None:
            errors.append(
                f"per_unit_storage_throughput: got {throughput}; allowed for {deployment_type}: none (leave it unset, scratch throughput follows capacity)"
            )
    elif throughput is None:
        errors.append(
            f"per_unit_storage_throughput: required for {deployment_type}; allowed: {_describe_allowed(allowed_throughput)} (MB/s per TiB)"
        )
    elif throughput not in allowed_throughput:
        errors.append(
            f"per_unit_storage_throughput: got {throughput}; allowed for {deployment_type}: {_describe_allowed(allowed_throughput)} (MB/s per TiB)"
        )

    version = params.get("file_system_type_version")
    if version not in LUSTRE_VERSIONS[deployment_type]:
        errors.append(f"file_system_type_version: got {version!r}; allowed for {deployment_type}: {_describe_allowed(LUSTRE_VERSIONS[deployment_type])}")

    compression = params.get("data_compression_type")
    if compression not in COMPRESSION_TYPES:
        errors.append(f"data_compression_type: got {compression!r}; allowed: {_describe_allowed(COMPRESSION_TYPES)}")

    if params.get("kms_key_id") and deployment_type not in PERSISTENT_TYPES:
        errors.append(
            f"kms_key_id: got {params['kms_key_id']!r} with deployment_type {deployment_type}; allowed only for "
            f"{_describe_allowed(PERSISTENT_TYPES)} (scratch file systems use an FSx-managed key)"
        )

    window = params.get("weekly_maintenance_start_time")
    if window is not None and not _MAINTENANCE.match(window):
        errors.append(f"weekly_maintenance_start_time: got {window!r}; allowed: d:HH:MM in UTC, d from 1 (Monday) to 7 (Sunday), for example 7:03:00")

    errors.extend(_backup_errors(params, deployment_type))

    subnet = params.get("subnet_id")
    if subnet is not None and not _SUBNET.match(subnet):
        errors.append(f"subnet_id: got {subnet!r}; allowed: a subnet ID such as subnet-0123456789abcdef0")
    for index, group in enumerate(params.get("security_group_ids") or []):
        if not isinstance(group, str) or not _SECURITY_GROUP.match(group):
            errors.append(f"security_group_ids[{index}]: got {group!r}; allowed: a security group ID such as sg-0123456789abcdef0")

    repository = params.get("data_repository")
    if repository:
        if deployment_type == "PERSISTENT_2":
            errors.append(
                "data_repository: not supported with deployment_type PERSISTENT_2 (AWS links S3 to PERSISTENT_2 through data "
                "repository associations, which this module does not manage); use SCRATCH_2 or PERSISTENT_1, or leave data_repository unset"
            )
        for key in ("import_path", "export_path"):
            path = repository.get(key)
            if path is None:
                continue
            match = _S3_PATH.match(path)
            if not match or ".." in match.group("bucket"):
                errors.append(f"data_repository.{key}: got {path!r}; allowed: s3://<bucket>[/<prefix>] with a valid S3 bucket name")
        export_path = repository.get("export_path")
        import_path = repository.get("import_path")
        if export_path and import_path and _bucket(export_path) != _bucket(import_path):
            errors.append(f"data_repository.export_path: got {export_path!r}; allowed: a path in the import bucket ({_bucket(import_path)})")
        policy = repository.get("auto_import_policy")
        if policy not in AUTO_IMPORT_POLICIES:
            errors.append(f"data_repository.auto_import_policy: got {policy!r}; allowed: {_describe_allowed(AUTO_IMPORT_POLICIES)}")
    return errors


def _bucket(path):
    return path[len("s3://"):].split("/", 1)[0]


def backups_supported(deployment_type, data_repository):
    """Whether FSx takes backups of such a file system: persistent, not linked to an S3 data repository."""
    return deployment_type in PERSISTENT_TYPES and not data_repository


def _backup_errors(params, deployment_type):
    errors = []
    retention = params.get("automatic_backup_retention_days")
    start = params.get("daily_automatic_backup_start_time")
    supported = backups_supported(deployment_type, params.get("data_repository"))
    why = (f"deployment_type {deployment_type} (FSx keeps no backups of scratch file systems)" if deployment_type not in PERSISTENT_TYPES
           else "data_repository (FSx keeps no backups of a file system linked to an S3 data repository)")
    if retention is not None:
        if not 0 <= retention <= MAX_BACKUP_RETENTION_DAYS:
            errors.append(f"automatic_backup_retention_days: got {retention}; allowed: 0 (no automatic backups) to {MAX_BACKUP_RETENTION_DAYS} days")
        elif retention and not supported:
            errors.append(f"automatic_backup_retention_days: got {retention} with {why}; allowed: 0 or unset")
    if start is not None:
        if not _BACKUP_START.match(start):
            errors.append(f"daily_automatic_backup_start_time: got {start!r}; allowed: HH:MM in UTC, for example 03:00")
        elif not supported:
            errors.append(f"daily_automatic_backup_start_time: got {start!r} with {why}; allowed: unset")
    return errors


# ------------------------------------------------------------------ decisions


def desired_tags(params):
    tags = dict(params.get("tags") or {})
    tags["Name"] = params["name"]
    return tags


def create_request(params):
    """The CreateFileSystem request for the options (without ClientRequestToken)."""
    deployment_type = params["deployment_type"]
    lustre = {"DeploymentType": deployment_type, "DataCompressionType": params["data_compression_type"]}
    if params.get("per_unit_storage_throughput") is not None:
        lustre["PerUnitStorageThroughput"] = params["per_unit_storage_throughput"]
    if params.get("weekly_maintenance_start_time"):
        lustre["WeeklyMaintenanceStartTime"] = params["weekly_maintenance_start_time"]
    retention = params.get("automatic_backup_retention_days")
    if retention is not None and backups_supported(deployment_type, params.get("data_repository")):
        lustre["AutomaticBackupRetentionDays"] = retention
        if retention and params.get("daily_automatic_backup_start_time"):
            lustre["DailyAutomaticBackupStartTime"] = params["daily_automatic_backup_start_time"]
    repository = params.get("data_repository")
    if repository:
        lustre["ImportPath"] = repository["import_path"]
        if repository.get("export_path"):
            lustre["ExportPath"] = repository["export_path"]
        lustre["AutoImportPolicy"] = repository["auto_import_policy"]
    request = {
        "FileSystemType": "LUSTRE",
        "FileSystemTypeVersion": params["file_system_type_version"],
        "StorageCapacity": params["storage_capacity"],
        "StorageType": "SSD",
        "SubnetIds": [params["subnet_id"]],
        "SecurityGroupIds": list(params.get("security_group_ids") or []),
        "LustreConfiguration": lustre,
        "Tags": common.tag_list(desired_tags(params)),
    }
    if params.get("kms_key_id"):
        request["KmsKeyId"] = params["kms_key_id"]
    return request


def _kms_matches(current, wanted):
    """A key given by ID matches the key ARN AWS reports."""
    return current == wanted or current.endswith("/" + wanted)


def plan_update(current, params, current_security_group_ids=None):
    """Decide what an existing file system needs to match the options.

    Compares only what the options ask for and what DescribeFileSystems
    reports (a field missing from the answer is left alone).
    ``current_security_group_ids`` is None when unknown (no network
    interfaces reported). Returns a dict in the shape of
    ``trainium_common.new_plan``:

    * ``errors``: changes AWS refuses (a capacity decrease);
    * ``immutable``: differences that need a new file system, as
      ``"option: current -> wanted"``;
    * ``update``: UpdateFileSystem parameters (without FileSystemId), empty
      when nothing is to update;
    * ``tags_to_set`` (dict), ``tags_to_remove`` (list) and ``changed``.
    """
    lustre = current.get("LustreConfiguration") or {}
    repository = lustre.get("DataRepositoryConfiguration") or {}
    plan = {"errors": [], "immutable": [], "update": {}}
    fs_id = current.get("FileSystemId")

    def immutable(option, have, want):
        if have is not None and want is not None and have != want:
            plan["immutable"].append(f"{option}: {have} -> {want}")

    immutable("deployment_type", lustre.get("DeploymentType"), params.get("deployment_type"))
    subnets = current.get("SubnetIds")
    if subnets and params.get("subnet_id") and params["subnet_id"] not in subnets:
        plan["immutable"].append(f"subnet_id: {', '.join(subnets)} -> {params['subnet_id']}")
    wanted_groups = params.get("security_group_ids")
    if current_security_group_ids is not None and wanted_groups is not None and sorted(set(current_security_group_ids)) != sorted(set(wanted_groups)):
        plan["immutable"].append(f"security_group_ids: {sorted(set(current_security_group_ids))} -> {sorted(set(wanted_groups))}")
    if params.get("kms_key_id") and current.get("KmsKeyId") and not _kms_matches(current["KmsKeyId"], params["kms_key_id"]):
        plan["immutable"].append(f"kms_key_id: {current['KmsKeyId']} -> {params['kms_key_id']}")
    immutable("file_system_type_version", current.get("FileSystemTypeVersion"), params.get("file_system_type_version"))
    wanted_repository = params.get("data_repository")
    if wanted_repository:
        have_import = repository.get("ImportPath")
        if lustre and have_import is None and not repository:
            plan["immutable"].append(f"data_repository.import_path: none -> {wanted_repository['import_path']}")
        immutable("data_repository.import_path", have_import, wanted_repository.get("import_path"))
        immutable("data_repository.export_path", repository.get("ExportPath"), wanted_repository.get("export_path"))

    update_lustre = {}
    capacity = params.get("storage_capacity")
    have_capacity = current.get("StorageCapacity")
    if capacity is not None and have_capacity is not None and capacity != have_capacity:
        if capacity < have_capacity:
            plan["errors"].append(
                f"storage_capacity: got {capacity}; file system {fs_id} has {have_capacity} GiB and FSx for Lustre cannot shrink; "
                f"allowed: {have_capacity} or more, in multiples of {CAPACITY_STEP} GiB"
            )
        elif capacity % CAPACITY_STEP:
            plan["errors"].append(
                f"storage_capacity: got {capacity}; an increase of file system {fs_id} (now {have_capacity} GiB) must be a multiple of {CAPACITY_STEP} GiB"
            )
        else:
            plan["update"]["StorageCapacity"] = capacity
    throughput = params.get("per_unit_storage_throughput")
    have_throughput = lustre.get("PerUnitStorageThroughput")
    if throughput is not None and have_throughput is not None and throughput != have_throughput:
        update_lustre["PerUnitStorageThroughput"] = throughput
    compression = params.get("data_compression_type")
    have_compression = lustre.get("DataCompressionType")
    if compression and have_compression and compression != have_compression:
        update_lustre["DataCompressionType"] = compression
    window = params.get("weekly_maintenance_start_time")
    if window and lustre.get("WeeklyMaintenanceStartTime") and window != lustre["WeeklyMaintenanceStartTime"]:
        update_lustre["WeeklyMaintenanceStartTime"] = window
    update_lustre.update(_backup_update(lustre, params))
    if wanted_repository and repository.get("AutoImportPolicy") and wanted_repository["auto_import_policy"] != repository["AutoImportPolicy"]:
        update_lustre["AutoImportPolicy"] = wanted_repository["auto_import_policy"]
    if update_lustre:
        plan["update"]["LustreConfiguration"] = update_lustre

    have_tags = boto3_tag_list_to_ansible_dict(current.get("Tags") or [])
    if params.get("tags") is None:
        tags = common.tag_diff(have_tags, {"Name": params["name"]}, purge_tags=False)
    else:
        tags = common.tag_diff(have_tags, desired_tags(params), params.get("purge_tags", True))
    return common.new_plan(plan["errors"], tags, immutable=plan["immutable"], update=plan["update"])


def _backup_update(lustre, params):
    """The automatic backup settings UpdateFileSystem needs (empty when none differ).

    Only where FSx takes backups; the retention is compared when the file
    system reports one (AWS reports it for every persistent file system), the
    start time when backups are (or become) on and it differs.
    """
    if not backups_supported(lustre.get("DeploymentType") or params.get("deployment_type"), lustre.get("DataRepositoryConfiguration")):
        return {}
    update = {}
    retention = params.get("automatic_backup_retention_days")
    have_retention = lustre.get("AutomaticBackupRetentionDays")
    if retention is not None and have_retention is not None and retention != have_retention:
        update["AutomaticBackupRetentionDays"] = retention
    start = params.get("daily_automatic_backup_start_time")
    effective = retention if retention is not None else have_retention
    if start and effective and start != lustre.get("DailyAutomaticBackupStartTime"):
        update["DailyAutomaticBackupStartTime"] = start
    return update


def apply_plan(current, plan):
    """The DescribeFileSystems entry as it will be once ``plan`` is applied (for diff and check mode)."""
    after = dict(current)
    after["LustreConfiguration"] = dict(current.get("LustreConfiguration") or {})
    if "StorageCapacity" in plan["update"]:
        after["StorageCapacity"] = plan["update"]["StorageCapacity"]
    lustre_update = dict(plan["update"].get("LustreConfiguration") or {})
    policy = lustre_update.pop("AutoImportPolicy", None)
    after["LustreConfiguration"].update(lustre_update)
    if policy:
        repository = dict(after["LustreConfiguration"].get("DataRepositoryConfiguration") or {})
        repository["AutoImportPolicy"] = policy
        after["LustreConfiguration"]["DataRepositoryConfiguration"] = repository
    tags = common.tags_after(boto3_tag_list_to_ansible_dict(current.get("Tags") or []), plan["tags_to_set"], plan["tags_to_remove"])
    after["Tags"] = common.tag_list(tags)
    return after


def planned_file_system(params):
    """What DescribeFileSystems would report for a file system created from ``params`` (check mode)."""
    request = create_request(params)
    lustre = dict(request["LustreConfiguration"])
    repository = {k: lustre.pop(k) for k in ("ImportPath", "ExportPath", "AutoImportPolicy") if k in lustre}
    if repository:
        lustre["DataRepositoryConfiguration"] = repository
    planned = dict(request, LustreConfiguration=lustre)
    planned.pop("SecurityGroupIds")
    return planned


def find_by_name(file_systems, name):
    """(live, deleting): Lustre file systems whose Name tag is ``name``."""
    live, deleting = [], []
    for fs in file_systems:
        if fs.get("FileSystemType") != "LUSTRE":
            continue
        if boto3_tag_list_to_ansible_dict(fs.get("Tags") or []).get("Name") != name:
            continue
        (deleting if fs.get("Lifecycle") == DELETING else live).append(fs)
    return live, deleting


def summarize(fs, security_group_ids=None):
    """The module's file_system return value (snake_case) for a DescribeFileSystems entry."""
    if not fs:
        return {}
    lustre = fs.get("LustreConfiguration") or {}
    repository = lustre.get("DataRepositoryConfiguration") or {}
    tags = boto3_tag_list_to_ansible_dict(fs.get("Tags") or [])
    subnet_ids = list(fs.get("SubnetIds") or [])
    if security_group_ids is None:
        security_group_ids = fs.get("SecurityGroupIds")
    return {
        "file_system_id": fs.get("FileSystemId"),
        "name": tags.get("Name"),
        "resource_arn": fs.get("ResourceARN"),
        "lifecycle": fs.get("Lifecycle"),
        "failure_details": (fs.get("FailureDetails") or {}).get("Message"),
        "dns_name": fs.get("DNSName"),
        "mount_name": lustre.get("MountName"),
        "storage_capacity": fs.get("StorageCapacity"),
        "storage_type": fs.get("StorageType"),
        "deployment_type": lustre.get("DeploymentType"),
        "per_unit_storage_throughput": lustre.get("PerUnitStorageThroughput"),
        "data_compression_type": lustre.get("DataCompressionType"),
        "weekly_maintenance_start_time": lustre.get("WeeklyMaintenanceStartTime"),
        "automatic_backup_retention_days": lustre.get("AutomaticBackupRetentionDays"),
        "daily_automatic_backup_start_time": lustre.get("DailyAutomaticBackupStartTime"),
        "file_system_type_version": fs.get("FileSystemTypeVersion"),
        "kms_key_id": fs.get("KmsKeyId"),
        "vpc_id": fs.get("VpcId"),
        "subnet_ids": subnet_ids,
        "subnet_id": subnet_ids[0] if subnet_ids else None,
        "security_group_ids": sorted(security_group_ids) if security_group_ids is not None else None,
        "network_interface_ids": list(fs.get("NetworkInterfaceIds") or []),
        "data_repository": {
            "import_path": repository.get("ImportPath"),
            "export_path": repository.get("ExportPath"),
            "auto_import_policy": repository.get("AutoImportPolicy"),
        } if repository else None,
        "tags": tags,
    }


# ----------------------------------------------------------------- AWS calls


@FsxErrorHandler.common_error_handler("describe FSx file systems")
@AWSRetry.jittered_backoff()
def describe_file_systems(client):
    return common.all_items(client, "describe_file_systems", "FileSystems")


@FsxErrorHandler.list_error_handler("describe FSx file system", default_value=None)
@AWSRetry.jittered_backoff()
def describe_file_system(client, file_system_id):
    """One file system by ID, or None when it does not exist (any more)."""
    found = client.describe_file_systems(FileSystemIds=[file_system_id]).get("FileSystems", [])
    return found[0] if found else None


@FsxErrorHandler.list_error_handler("describe the network interfaces of the FSx file system", default_value=None)
@AWSRetry.jittered_backoff()
def security_groups_of(ec2_client, network_interface_ids):
    """Security groups of the file system's network interfaces (FSx reports them only there)."""
    if not network_interface_ids:
        return None
    interfaces = ec2_client.describe_network_interfaces(NetworkInterfaceIds=list(network_interface_ids))["NetworkInterfaces"]
    return sorted({group["GroupId"] for interface in interfaces for group in interface.get("Groups", [])})


@FsxErrorHandler.common_error_handler("create the FSx for Lustre file system")
@AWSRetry.jittered_backoff()
def create_file_system(client, request):
    """CreateFileSystem with the request of ``create_request``; the new file system (CREATING)."""
    return client.create_file_system(**request)["FileSystem"]


@FsxErrorHandler.common_error_handler("update the FSx for Lustre file system")
@AWSRetry.jittered_backoff()
def update_file_system(client, file_system_id, update):
    """UpdateFileSystem with the ``update`` of ``plan_update``; AWS accepts it only while the file system is AVAILABLE."""
    return client.update_file_system(FileSystemId=file_system_id, **update)["FileSystem"]


# CreateFileSystemFromBackup takes these LustreConfiguration members; the
# deployment type and the data come from the backup.
FROM_BACKUP_LUSTRE_KEYS = ("WeeklyMaintenanceStartTime", "DailyAutomaticBackupStartTime", "AutomaticBackupRetentionDays",
                           "DataCompressionType", "PerUnitStorageThroughput")
BACKUP_ID_RE = re.compile(r"^backup-[0-9a-f]{8,17}$")
LATEST_BACKUP = "latest"


def restore_request(params, backup_id):
    """The CreateFileSystemFromBackup request for the options and ``backup_id``."""
    request = create_request(params)
    request.pop("FileSystemType")
    request["LustreConfiguration"] = {key: value for key, value in request["LustreConfiguration"].items() if key in FROM_BACKUP_LUSTRE_KEYS}
    request["BackupId"] = backup_id
    return request


def newest_backup(backups, name, match_tags=None):
    """The newest AVAILABLE Lustre backup of the file system named ``name`` (its Name tag, and ``match_tags``); None when none."""
    wanted = dict(match_tags or {}, Name=name)
    candidates = []
    for backup in backups:
        tags = {tag["Key"]: tag["Value"] for tag in backup.get("Tags") or []}
        if backup.get("Lifecycle") != AVAILABLE or (backup.get("FileSystem") or {}).get("FileSystemType", "LUSTRE") != "LUSTRE":
            continue
        if all(tags.get(key) == str(value) for key, value in wanted.items()):
            candidates.append(backup)
    return max(candidates, key=lambda backup: str(backup.get("CreationTime")), default=None)


def restore_problem(backup, params):
    """Why ``backup`` cannot become this file system (None when it can): its deployment type and capacity must fit the options."""
    source = backup.get("FileSystem") or {}
    if backup.get("Lifecycle") != AVAILABLE:
        return f"restore_from_backup: backup {backup['BackupId']} is {backup.get('Lifecycle')}; allowed: an AVAILABLE backup"
    backup_type = (source.get("LustreConfiguration") or {}).get("DeploymentType")
    if backup_type and backup_type != params["deployment_type"]:
        return (f"restore_from_backup: backup {backup['BackupId']} is of a {backup_type} file system, deployment_type is "
                f"{params['deployment_type']}; allowed: a backup of the same deployment type (set deployment_type to {backup_type})")
    capacity = source.get("StorageCapacity")
    if capacity and params["storage_capacity"] < capacity:
        return (f"storage_capacity: got {params['storage_capacity']} GiB; allowed: at least the {capacity} GiB of backup "
                f"{backup['BackupId']} (restore_from_backup)")
    return None


@FsxBackupErrorHandler.list_error_handler("describe FSx backups", default_value=[])
@AWSRetry.jittered_backoff()
def describe_backups(client, backup_ids=None):
    """The account's FSx backups (those of ``backup_ids`` when given; none when one of them does not exist)."""
    args = {"BackupIds": list(backup_ids)} if backup_ids else {}
    return common.all_items(client, "describe_backups", "Backups", **args)


@FsxErrorHandler.common_error_handler("create the FSx for Lustre file system from a backup")
@AWSRetry.jittered_backoff()
def create_file_system_from_backup(client, request):
    """CreateFileSystemFromBackup with the request of ``restore_request``; the new file system (CREATING)."""
    return client.create_file_system_from_backup(**request)["FileSystem"]


def final_backup_possible(fs):
    """Whether FSx can take a final backup of ``fs`` now: a persistent file system, not linked to S3, AVAILABLE."""
    lustre = fs.get("LustreConfiguration") or {}
    return backups_supported(lustre.get("DeploymentType"), lustre.get("DataRepositoryConfiguration")) and fs.get("Lifecycle") == AVAILABLE


def final_backup_tags(fs, tags=None):
    """FinalBackupTags: ``tags`` when given, else the file system's own (without aws: ones); at most 50, by key."""
    if tags is None:
        tags = {k: v for k, v in boto3_tag_list_to_ansible_dict(fs.get("Tags") or []).items() if not k.startswith("aws:")}
    return common.tag_list(tags)[:MAX_BACKUP_TAGS]


def delete_request(fs, final_backup=False, tags=None):
    """DeleteFileSystem parameters.

    Persistent types say whether to take a final backup: with ``final_backup``
    when FSx can take one (:func:`final_backup_possible`), tagged with
    :func:`final_backup_tags`; otherwise SkipFinalBackup. Scratch types take
    none and get no LustreConfiguration.
    """
    request = {"FileSystemId": fs["FileSystemId"]}
    deployment_type = (fs.get("LustreConfiguration") or {}).get("DeploymentType")
    if deployment_type in PERSISTENT_TYPES:
        if final_backup and final_backup_possible(fs):
            request["LustreConfiguration"] = {"SkipFinalBackup": False}
            backup_tags = final_backup_tags(fs, tags)
            if backup_tags:
                request["LustreConfiguration"]["FinalBackupTags"] = backup_tags
        else:
            request["LustreConfiguration"] = {"SkipFinalBackup": True}
    return request


def busy_refusal(client, file_system_id):
    """Whether a DeleteFileSystem refusal means "busy, try again": ``ResourceInUseException``, or a ``BadRequest``
    while the file system's lifecycle, read back, is CREATING or UPDATING. FSx documents neither a code nor a message
    for a file system it will not delete yet, so the lifecycle decides, not the text."""

    def busy(error):
        code = common.error_code(error)
        if code == common.IN_USE_CODE:
            return True
        if code not in ("BadRequest", "BadRequestException"):
            return False
        try:
            fs = describe_file_system(client, file_system_id)
        except Exception:  # pylint: disable=broad-except
            # The read back failed: not known to be busy, so DeleteFileSystem's own error is the one reported.
            return False
        return bool(fs) and fs.get("Lifecycle") in BUSY_STATES

    return busy


@FsxErrorHandler.deletion_error_handler("delete the FSx for Lustre file system")
def delete_file_system(client, fs, timeout=0, clock=None, sleep=None, final_backup=False, tags=None):
    """DeleteFileSystem (see :func:`delete_request`); a refusal because the file system is busy is retried for ``timeout`` seconds.

    Returns the DeleteFileSystem answer (``LustreResponse.FinalBackupId`` names a final
    backup), False when the file system is already gone.
    """
    request = delete_request(fs, final_backup=final_backup, tags=tags)
    answer = common.retry_in_use(lambda: client.delete_file_system(**request), timeout, in_use=busy_refusal(client, fs["FileSystemId"]),
                                 clock=clock, sleep=sleep)
    return answer or {"FileSystemId": fs["FileSystemId"]}


def final_backup_id(answer):
    """The ID of the final backup a DeleteFileSystem answer names, or None."""
    if not isinstance(answer, dict):
        return None
    return (answer.get("LustreResponse") or {}).get("FinalBackupId") or None


def wait_until_settled(client, file_system_id, timeout, delay=15, clock=None, sleep=None):
    """Poll while the file system is CREATING or UPDATING (AWS refuses to delete it then).

    Returns the last DescribeFileSystems entry, None when it is gone. Any
    other lifecycle (AVAILABLE, FAILED, MISCONFIGURED, DELETING...) ends the
    wait. Raises TrainiumFsxError when ``timeout`` passes first.
    """
    return common.wait_until_settled(lambda: describe_file_system(client, file_system_id), BUSY_STATES, timeout,
                                     f"FSx file system {file_system_id}", state_key="Lifecycle", delay=delay,
                                     error=TrainiumFsxError, clock=clock, sleep=sleep)


def failure_reason(fs):
    return (fs.get("FailureDetails") or {}).get("Message", "no reason given")


def wait_for(client, file_system_id, timeout, delay=5, gone=False, clock=None, sleep=None):
    """Poll until the file system is AVAILABLE (or, with ``gone``, no longer listed).

    Returns the last DescribeFileSystems entry (None when gone). Raises
    TrainiumFsxError when it reaches FAILED or the timeout passes.
    """
    return common.wait_for_status(lambda: describe_file_system(client, file_system_id), AVAILABLE, timeout,
                                  f"FSx file system {file_system_id}", gone=gone, failed=() if gone else (FAILED,),
                                  reason=failure_reason, state_key="Lifecycle", delay=delay, error=TrainiumFsxError,
                                  clock=clock, sleep=sleep)
