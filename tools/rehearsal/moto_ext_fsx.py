# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""FSx for Lustre additions to moto server for the trainium.eks rehearsal (see moto_ext.py).

Each addition closes a moto 5.2.5 gap on a code path of
trainium.eks.fsx_lustre and keeps the shapes of the FSx API reference.

0. File system lifecycle. moto's CreateFileSystem/DescribeFileSystems
   answers carry no Lifecycle, so a waiter for AVAILABLE never ends. As AWS
   documents, a new file system is CREATING, then AVAILABLE; here that takes
   TRAINIUM_REHEARSAL_FSX_CREATE_SECONDS (default 3) seconds, or AWS's
   8 minutes at the scale factor of moto_ext_timing.py when one is set.
1. UpdateFileSystem. moto answers NotImplemented. As AWS documents for
   Lustre: StorageCapacity must be a multiple of 2400 GiB greater than the
   current capacity (BadRequest otherwise); LustreConfiguration may change
   PerUnitStorageThroughput (persistent deployment types only; BadRequest on
   scratch), DataCompressionType, WeeklyMaintenanceStartTime and
   AutoImportPolicy. Changes apply at once (AWS takes minutes, with the file
   system UPDATING); the answer is the updated FileSystem.
2. DescribeFileSystems shape. moto echoes the CreateFileSystem
   LustreConfiguration request, so ImportPath/ExportPath/AutoImportPolicy sit
   at its top level (boto3 drops them: they are not members of
   LustreFileSystemConfiguration) and MountName and FileSystemTypeVersion are
   missing. Here the answer carries, as AWS does, the data repository fields
   under LustreConfiguration.DataRepositoryConfiguration (Lifecycle
   AVAILABLE; without an ExportPath in the request, AWS's default
   s3://<import bucket>/FSxLustre<creation timestamp>), a
   MountName (8 lowercase characters; the static PersistentVolume needs it)
   and the FileSystemTypeVersion of the request.
3. Network interfaces. On AWS, FSx places the file system's network
   interfaces in its subnet with the request's security groups, reports
   their IDs (NetworkInterfaceIds) and the VpcId, rejects a subnet or security
   group that does not exist (InvalidNetworkSettings) and removes the
   interfaces with the file system; DescribeFileSystems has no
   SecurityGroupIds, clients read them from the interfaces. moto checks
   nothing and creates no interface. Here CreateFileSystem checks the subnet
   and the groups, creates one requester-managed interface in the subnet with
   the groups, and DeleteFileSystem deletes it.
4. Backups. moto stores the CreateFileSystem LustreConfiguration as given
   and ignores DeleteFileSystem's. As AWS documents (CreateFileSystem,
   UpdateFileSystem, DeleteFileSystemLustreConfiguration, CreateBackup):
   a persistent file system reports AutomaticBackupRetentionDays (0 when
   the request had none); automatic backups (a retention above 0, a
   DailyAutomaticBackupStartTime) and final backups are refused
   (BadRequest) for scratch types and for a file system linked to an S3
   data repository; UpdateFileSystem changes AutomaticBackupRetentionDays
   and DailyAutomaticBackupStartTime; DeleteFileSystem with
   LustreConfiguration.SkipFinalBackup false (the default is true) keeps
   a final backup of the file system (FSx backup, AVAILABLE, type
   USER_INITIATED, tagged with FinalBackupTags, its FileSystem described
   by ID, type, capacity and deployment type) that outlives it and
   answers LustreResponse.FinalBackupId / FinalBackupTags.
5. CreateFileSystemFromBackup. moto answers NotImplemented. As AWS
   documents: the backup must exist (BackupNotFound) and be AVAILABLE
   (BadRequest); the new file system takes the backup's deployment type
   and storage type, a StorageCapacity of at least the backup's (BadRequest
   when smaller; the backup's when not given), the request's subnet,
   security groups (checked, with a network interface, as in 3), tags and
   Lustre settings (maintenance window, backups, compression), and goes
   CREATING, then AVAILABLE, like a new one. (The rehearsal holds no data,
   so there is none to restore.)
"""

from __future__ import annotations

import datetime
import json
import os
import time
import uuid

from moto.core.exceptions import JsonRESTError
from moto_ext_ec2 import ec2_backend
from moto_ext_timing import creating_seconds

_REPOSITORY_KEYS = ("ImportPath", "ExportPath", "AutoImportPolicy", "ImportedFileChunkSize")
_UPDATABLE = ("PerUnitStorageThroughput", "DataCompressionType", "WeeklyMaintenanceStartTime", "AutoImportPolicy",
              "AutomaticBackupRetentionDays", "DailyAutomaticBackupStartTime")
_BACKUP_KEYS = ("AutomaticBackupRetentionDays", "DailyAutomaticBackupStartTime")
_PERSISTENT = ("PERSISTENT_1", "PERSISTENT_2")


def _fsx_to_dict(original):
    def to_dict(self):
        answer = original(self)
        if "Lifecycle" not in answer:
            created = self.__dict__.setdefault("_trainium_created", time.monotonic())
            # Fixed at creation (the first answer is CreateFileSystem's): a later scale leaves it alone.
            delay = self.__dict__.setdefault(
                "_trainium_creating_seconds",
                creating_seconds("file_system", float(os.environ.get("TRAINIUM_REHEARSAL_FSX_CREATE_SECONDS", "3"))))
            answer["Lifecycle"] = "AVAILABLE" if time.monotonic() - created >= delay else "CREATING"
        return answer

    return to_dict


class BadRequest(JsonRESTError):
    def __init__(self, message):
        super().__init__("BadRequest", message)


def _lustre_to_dict(original):
    def to_dict(self):
        answer = original(self)
        if self.file_system_type != "LUSTRE":
            return answer
        lustre = dict(answer.get("LustreConfiguration") or {})
        repository = {key: lustre.pop(key) for key in _REPOSITORY_KEYS if key in lustre}
        if repository.get("ImportPath"):
            bucket = repository["ImportPath"][len("s3://"):].split("/", 1)[0]
            stamp = self.__dict__.setdefault("_trainium_created_at", datetime.datetime.now(datetime.timezone.utc))
            repository.setdefault("ExportPath", f"s3://{bucket}/FSxLustre{stamp:%Y%m%dT%H%M%SZ}")
            repository.setdefault("AutoImportPolicy", "NONE")
            repository["Lifecycle"] = "AVAILABLE"
            lustre["DataRepositoryConfiguration"] = repository
        lustre["MountName"] = self.__dict__.setdefault("_trainium_mount_name", uuid.uuid4().hex[:8])
        if lustre.get("DeploymentType") in _PERSISTENT:
            lustre.setdefault("AutomaticBackupRetentionDays", 0)
        answer["LustreConfiguration"] = lustre
        version = getattr(self, "_trainium_type_version", None)
        if version:
            answer["FileSystemTypeVersion"] = version
        if getattr(self, "_trainium_enis", None):
            answer["NetworkInterfaceIds"] = list(self._trainium_enis)  # pylint: disable=protected-access
            answer["VpcId"] = self._trainium_vpc_id  # pylint: disable=protected-access
        return answer

    return to_dict


class InvalidNetworkSettings(JsonRESTError):
    def __init__(self, message):
        super().__init__("InvalidNetworkSettings", message)


def _network(backend, subnet_ids, group_ids):
    """The subnet and groups of a new file system, checked as FSx does."""
    from moto.ec2.exceptions import InvalidSubnetIdError  # pylint: disable=import-outside-toplevel

    ec2 = ec2_backend(backend)
    try:
        subnet = ec2.get_subnet((subnet_ids or [""])[0])
    except InvalidSubnetIdError as e:
        raise InvalidNetworkSettings(f"The subnet ID '{(subnet_ids or [''])[0]}' does not exist") from e
    for group_id in group_ids or []:
        group = ec2.get_security_group_from_id(group_id)
        if group is None or group.vpc_id != subnet.vpc_id:
            raise InvalidNetworkSettings(f"The security group '{group_id}' does not exist in VPC '{subnet.vpc_id}'")
    return ec2, subnet


def _backup_refusal(lustre):
    """Why FSx takes no backups of a file system with this LustreConfiguration (None when it does)."""
    if lustre.get("DeploymentType") not in _PERSISTENT:
        return f"Backups are not supported for {lustre.get('DeploymentType')} file systems."
    if any(lustre.get(key) for key in _REPOSITORY_KEYS):
        return "Backups are not supported for file systems linked to a data repository."
    return None


def _create_with_network(original):
    def create_file_system(self, *args, **kwargs):
        lustre = kwargs.get("lustre_configuration") or {}
        if kwargs.get("file_system_type") == "LUSTRE" and any(lustre.get(key) for key in _BACKUP_KEYS):
            refusal = _backup_refusal(lustre)
            if refusal:
                raise BadRequest(refusal)
        ec2, subnet = _network(self, kwargs.get("subnet_ids"), kwargs.get("security_group_ids"))
        file_system = original(self, *args, **kwargs)
        # pylint: disable=protected-access
        file_system._trainium_type_version = kwargs.get("file_system_type_version")
        eni = ec2.create_network_interface(
            subnet, None, group_ids=list(kwargs.get("security_group_ids") or []),
            description=f"ENI for Amazon FSx file system {file_system.file_system_id}",
        )
        file_system._trainium_enis = [eni.id]
        file_system._trainium_vpc_id = subnet.vpc_id
        return file_system

    return create_file_system


def _final_backup(backend, file_system, request):
    """The final backup DeleteFileSystem takes when SkipFinalBackup is false; None when skipped."""
    from moto.fsx.models import Backup  # pylint: disable=import-outside-toplevel

    request = request or {}
    if request.get("SkipFinalBackup", True) or file_system is None or file_system.file_system_type != "LUSTRE":
        return None
    refusal = _backup_refusal(file_system.lustre_configuration or {})
    if refusal:
        raise BadRequest(refusal)
    backup = Backup(backend.account_id, backend.region_name, file_system.file_system_id, None, None,
                    request.get("FinalBackupTags") or None, backend)
    backup.lifecycle = "AVAILABLE"
    # pylint: disable=protected-access
    backup._trainium_type = "USER_INITIATED"
    lustre = file_system.lustre_configuration or {}
    backup._trainium_file_system = {
        "FileSystemId": file_system.file_system_id, "FileSystemType": "LUSTRE", "StorageCapacity": file_system.storage_capacity,
        "StorageType": file_system.storage_type, "LustreConfiguration": {"DeploymentType": lustre.get("DeploymentType")},
    }
    backend.backups[backup.backup_id] = backup
    return backup


def _backup_to_dict(original):
    def to_dict(self):
        answer = original(self)
        # pylint: disable=protected-access
        if getattr(self, "_trainium_type", None):
            answer["Type"] = self._trainium_type
            answer["FileSystem"] = self._trainium_file_system
        return answer

    return to_dict


def _delete_with_network(original):
    def delete_file_system(self, file_system_id, *args, **kwargs):
        file_system = self.file_systems.get(file_system_id)
        backup = _final_backup(self, file_system, kwargs.get("lustre_configuration"))
        answer = original(self, file_system_id, *args, **kwargs)
        for eni_id in getattr(file_system, "_trainium_enis", []):
            ec2_backend(self).enis.pop(eni_id, None)
        if file_system is not None and file_system.file_system_type == "LUSTRE":
            # AWS's member names (moto answers FinalBackUpId, which boto3 drops).
            lustre_response = {}
            if backup is not None:
                lustre_response = {"FinalBackupId": backup.backup_id, "FinalBackupTags": self.list_tags_for_resource(backup.resource_arn)}
            answer = (answer[0], answer[1], answer[2], lustre_response, answer[4])
        return answer

    return delete_file_system


def update_file_system(self):
    from moto.fsx.exceptions import FileSystemNotFound  # pylint: disable=import-outside-toplevel

    params = json.loads(self.body)
    file_system_id = params.get("FileSystemId")
    file_system = self.fsx_backend.file_systems.get(file_system_id)
    if file_system is None:
        raise FileSystemNotFound(file_system_id)
    lustre = dict(file_system.lustre_configuration or {})
    deployment_type = lustre.get("DeploymentType")
    capacity = params.get("StorageCapacity")
    if capacity is not None and file_system.file_system_type == "LUSTRE":
        if capacity <= file_system.storage_capacity or capacity % 2400:
            raise BadRequest(
                f"Unable to perform the storage capacity update. The requested storage capacity {capacity} GiB must be a "
                f"multiple of 2400 GiB greater than the current storage capacity {file_system.storage_capacity} GiB."
            )
    changes = params.get("LustreConfiguration") or {}
    unknown = sorted(set(changes) - set(_UPDATABLE))
    if unknown:
        raise BadRequest(f"The rehearsal does not emulate updating {', '.join(unknown)}.")
    if "PerUnitStorageThroughput" in changes and deployment_type not in _PERSISTENT:
        raise BadRequest(f"PerUnitStorageThroughput can only be updated for persistent SSD file systems, not {deployment_type}.")
    if "AutoImportPolicy" in changes and not lustre.get("ImportPath"):
        raise BadRequest("AutoImportPolicy can only be updated for a file system linked to a data repository.")
    if any(changes.get(key) for key in _BACKUP_KEYS) and _backup_refusal(lustre):
        raise BadRequest(_backup_refusal(lustre))
    if capacity is not None:
        file_system.storage_capacity = capacity
    lustre.update(changes)
    file_system.lustre_configuration = lustre
    return json.dumps({"FileSystem": file_system.to_dict()})


_FROM_BACKUP_LUSTRE = ("WeeklyMaintenanceStartTime", "DailyAutomaticBackupStartTime", "AutomaticBackupRetentionDays",
                       "CopyTagsToBackups", "DataCompressionType", "PerUnitStorageThroughput")


def create_file_system_from_backup(self):
    params = json.loads(self.body)
    backup = self.fsx_backend.backups.get(params.get("BackupId"))
    if backup is None:
        raise JsonRESTError("BackupNotFound", f"Backup '{params.get('BackupId')}' does not exist.")
    if backup.lifecycle != "AVAILABLE":
        raise BadRequest(f"Backup {backup.backup_id} is {backup.lifecycle}, not AVAILABLE.")
    # pylint: disable=protected-access
    source = getattr(backup, "_trainium_file_system", None)
    if source is None:
        raise BadRequest(f"The rehearsal does not emulate restoring backup {backup.backup_id} (not a final backup).")
    capacity = params.get("StorageCapacity") or source["StorageCapacity"]
    if capacity < source["StorageCapacity"]:
        raise BadRequest(f"The storage capacity {capacity} GiB is smaller than the {source['StorageCapacity']} GiB of backup {backup.backup_id}.")
    lustre = {key: value for key, value in (params.get("LustreConfiguration") or {}).items() if key in _FROM_BACKUP_LUSTRE}
    lustre["DeploymentType"] = source["LustreConfiguration"]["DeploymentType"]
    file_system = self.fsx_backend.create_file_system(
        client_request_token=params.get("ClientRequestToken"), file_system_type="LUSTRE", storage_capacity=capacity,
        storage_type=source.get("StorageType") or "SSD", subnet_ids=params.get("SubnetIds"),
        security_group_ids=params.get("SecurityGroupIds"), tags=params.get("Tags"), kms_key_id=params.get("KmsKeyId"),
        windows_configuration=None, lustre_configuration=lustre, ontap_configuration=None,
        file_system_type_version=params.get("FileSystemTypeVersion"), open_zfs_configuration=None,
    )
    return json.dumps({"FileSystem": file_system.to_dict()})


def install():
    from moto.fsx.models import Backup, FileSystem, FSxBackend  # pylint: disable=import-outside-toplevel
    from moto.fsx.responses import FSxResponse  # pylint: disable=import-outside-toplevel

    # The lifecycle first: the Lustre shape wraps what it answers.
    FileSystem.to_dict = _lustre_to_dict(_fsx_to_dict(FileSystem.to_dict))
    FSxBackend.create_file_system = _create_with_network(FSxBackend.create_file_system)
    FSxBackend.delete_file_system = _delete_with_network(FSxBackend.delete_file_system)
    Backup.to_dict = _backup_to_dict(Backup.to_dict)
    FSxResponse.update_file_system = update_file_system
    FSxResponse.create_file_system_from_backup = create_file_system_from_backup
