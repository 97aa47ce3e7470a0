#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fsx_lustre
short_description: Create, update and delete an Amazon FSx for Lustre file system
version_added: 0.2.0
description:
  - Manages one FSx for Lustre file system, found by its C(Name) tag (O(name)).
  - With O(state=present) it creates the file system when none has the name, or brings an
    existing one in line with the options where AWS allows it - a larger storage capacity,
    another throughput per unit of storage, data compression, the maintenance window, the
    automatic backup retention and window, the auto-import policy and tags. Differences that
    AWS cannot change in place (deployment type, subnet, security groups, KMS key, Lustre
    version, data repository paths) fail the task with a message that lists them; delete and
    re-create the file system to change those.
  - Storage capacity only grows. A smaller O(storage_capacity) than the file system has fails
    the task and names both values.
  - Only options that are set are compared, and only with fields that C(DescribeFileSystems)
    reports.
  - With O(state=absent) it deletes the file system with that name, after a final backup when
    O(final_backup=true) (the default) and FSx can take one, and, with O(wait=true), waits until
    it is gone. A missing file system is not an error.
    AWS refuses to delete a file system that is C(CREATING) or C(UPDATING) (a run interrupted
    during creation), so the module first waits, whatever O(wait) says and for at most
    O(wait_timeout), until it leaves those states, and retries a delete refused as busy with
    backoff within the same bound.
  - Check mode reports what would be created, updated or deleted without calling any
    mutating API; with C(--diff) it returns the file system before and after.
author:
  - trainium.eks developers (@trainium-eks)
options:
  name:
    description:
      - Value of the C(Name) tag that identifies the file system.
    type: str
    required: true
  state:
    description:
      - V(present) creates or updates the file system, V(absent) deletes it.
    type: str
    default: present
    choices: [present, absent]
  deployment_type:
    description:
      - FSx for Lustre deployment type (SSD storage). Required with O(state=present).
    type: str
    choices: [SCRATCH_2, PERSISTENT_1, PERSISTENT_2]
  storage_capacity:
    description:
      - Storage capacity in GiB. Required with O(state=present).
      - At creation AWS accepts 1200, 2400 or a multiple of 2400 GiB for V(SCRATCH_2),
        V(PERSISTENT_1) and V(PERSISTENT_2).
      - An existing file system can only grow, to a multiple of 2400 GiB above its
        current capacity.
    type: int
  per_unit_storage_throughput:
    description:
      - Throughput per TiB of storage, in MB/s.
      - V(50), V(100) or V(200) for V(PERSISTENT_1); V(125), V(250), V(500) or V(1000) for
        V(PERSISTENT_2); required for those. Must stay unset for V(SCRATCH_2).
      - Can be changed on an existing persistent file system.
    type: int
  subnet_id:
    description:
      - Subnet of the file system (one subnet; FSx for Lustre lives in one availability zone).
      - Needed to create the file system; check mode accepts it unset and reports the creation.
    type: str
  security_group_ids:
    description:
      - Security groups of the file system's network interfaces. They must allow Lustre
        traffic (TCP 988 and 1018-1023) from the clients and from the groups themselves.
      - Compared with the groups of the existing file system's network interfaces when
        AWS reports those.
    type: list
    elements: str
  file_system_type_version:
    description:
      - Lustre version. V(2.10) is not available for V(PERSISTENT_2).
    type: str
    default: "2.15"
    choices: ["2.10", "2.12", "2.15"]
  data_compression_type:
    description:
      - Data compression; can be changed later.
    type: str
    default: LZ4
    choices: [NONE, LZ4]
  kms_key_id:
    description:
      - ID or ARN of the KMS key that encrypts a persistent file system. Unset uses the
        AWS managed key. Not allowed for V(SCRATCH_2).
    type: str
  weekly_maintenance_start_time:
    description:
      - Start of the weekly maintenance window, V(d:HH:MM) in UTC, where V(d) is 1 (Monday)
        to 7 (Sunday). Unset lets AWS choose.
    type: str
  automatic_backup_retention_days:
    description:
      - Days FSx keeps the automatic daily backups, 0 (none) to 90. Unset leaves the setting alone
        (AWS's default for a new file system is 0).
      - Only for V(PERSISTENT_1) and V(PERSISTENT_2) without O(data_repository); FSx takes no backups
        of scratch file systems or of file systems linked to an S3 data repository, so a value
        above 0 fails for those, and 0 is not sent.
      - Can be changed on an existing file system. Automatic backups are deleted with the file system.
    type: int
    version_added: 0.4.0
  daily_automatic_backup_start_time:
    description:
      - Start of the daily automatic backup window, V(HH:MM) in UTC. Unset lets AWS choose.
      - Only where O(automatic_backup_retention_days) applies; sent only while backups are on.
    type: str
    version_added: 0.4.0
  final_backup:
    description:
      - With O(state=absent), have FSx take a final backup before it deletes the file system
        (C(DeleteFileSystem) C(LustreConfiguration.SkipFinalBackup=false)). The backup outlives
        the file system (and is billed) until you delete it; RV(final_backup_id) names it.
      - FSx takes one only of a persistent file system not linked to an S3 data repository that is
        C(AVAILABLE); any other is deleted without one (a scratch file system has no backups; a
        C(FAILED) one cannot be backed up).
      - V(false) deletes without a backup, so the data is gone for good.
    type: bool
    default: true
    version_added: 0.4.0
  final_backup_tags:
    description:
      - Tags of the final backup (at most 50). Unset gives it the file system's own tags
        (without C(aws:) ones), so it keeps its C(Name) and cluster tags.
    type: dict
    version_added: 0.4.0
  restore_from_backup:
    description:
      - Create the file system from a backup instead of empty (C(CreateFileSystemFromBackup)), given
        as a backup ID, or V(latest) for the newest C(AVAILABLE) backup whose C(Name) tag is O(name)
        (the final backup O(state=absent) takes carries it). Only when the file system does not exist;
        an existing one is never replaced.
      - With V(latest) and no such backup, the file system is created empty, with a warning.
      - With V(latest), O(restore_match_tags) narrows the backups considered.
      - The backup must be of the O(deployment_type) and at most O(storage_capacity) GiB.
      - Not with O(data_repository).
    type: str
    version_added: 0.4.0
  restore_match_tags:
    description:
      - With O(restore_from_backup=latest), only backups that also carry these tags (besides the C(Name) tag)
        are considered, so that a backup someone else tagged with the same name is not restored.
    type: dict
    version_added: 0.4.0
  data_repository:
    description:
      - Link an S3 bucket (prefix) to the root of the file system, set with C(ImportPath),
        C(ExportPath) and C(AutoImportPolicy) at creation.
      - For V(SCRATCH_2) and V(PERSISTENT_1) only; V(PERSISTENT_2) links S3 through data
        repository associations, which this module does not manage.
      - The paths cannot change after creation; the auto-import policy can.
    type: dict
    suboptions:
      import_path:
        description:
          - S3 URL whose objects appear in the file system, V(s3://bucket) or V(s3://bucket/prefix).
        type: str
        required: true
      export_path:
        description:
          - S3 URL, in the same bucket, that changed files are exported to. Unset lets AWS choose.
        type: str
      auto_import_policy:
        description:
          - Which S3 changes are imported automatically.
        type: str
        default: NEW_CHANGED_DELETED
        choices: [NONE, NEW, NEW_CHANGED, NEW_CHANGED_DELETED]
  tags:
    description:
      - Tags for the file system. The C(Name) tag is always O(name).
      - Unset leaves existing tags alone.
    type: dict
    aliases: [resource_tags]
  purge_tags:
    description:
      - Remove tags not in O(tags) (the C(Name) tag stays).
    type: bool
    default: true
  wait:
    description:
      - Wait until a new or updated file system is C(AVAILABLE) (5 to 15 minutes on AWS for
        a new one), or until a deleted one is gone.
      - With O(state=absent) the wait before the delete, for a file system that is C(CREATING)
        or C(UPDATING), always happens (bounded by O(wait_timeout)); this option only decides
        whether to wait afterwards until the file system is gone.
    type: bool
    default: false
  wait_timeout:
    description:
      - How long to wait, in seconds, for each wait (also the bound of the wait and retries
        before a delete).
    type: int
    default: 1800
notes:
  - Needs C(fsx:DescribeFileSystems), C(fsx:CreateFileSystem), C(fsx:UpdateFileSystem),
    C(fsx:DeleteFileSystem), C(fsx:TagResource), C(fsx:UntagResource), C(fsx:CreateBackup) (the final
    backup; AWS asks for it when C(SkipFinalBackup) is false),
    C(ec2:DescribeNetworkInterfaces) and the EC2 permissions FSx needs to create network
    interfaces in the subnet (see the FSx for Lustre user guide); C(s3) access for a data repository.
  - Names are not unique in FSx. Two live file systems with the same C(Name) tag fail the task.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Create a 1.2 TiB persistent file system for training data, with a week of daily backups
  trainium.eks.fsx_lustre:
    name: trn-rehearsal-data
    deployment_type: PERSISTENT_1
    storage_capacity: 1200
    per_unit_storage_throughput: 200
    automatic_backup_retention_days: 7
    daily_automatic_backup_start_time: "03:00"
    subnet_id: subnet-0123456789abcdef0
    security_group_ids: [sg-0123456789abcdef0]
    tags:
      trainium.eks/cluster: trn-rehearsal
  register: data_fs

- name: Wait until it is available
  trainium.eks.fsx_lustre:
    name: trn-rehearsal-data
    deployment_type: PERSISTENT_1
    storage_capacity: 1200
    per_unit_storage_throughput: 200
  register: data_fs
  until: data_fs.file_system.lifecycle == 'AVAILABLE'
  retries: 90
  delay: 10

- name: Scratch file system that imports an S3 prefix
  trainium.eks.fsx_lustre:
    name: scratch-cache
    deployment_type: SCRATCH_2
    storage_capacity: 2400
    subnet_id: subnet-0123456789abcdef0
    security_group_ids: [sg-0123456789abcdef0]
    data_repository:
      import_path: s3://my-datasets/wikicorpus
    wait: true

- name: Delete it and wait until it is gone (scratch - no final backup)
  trainium.eks.fsx_lustre:
    name: scratch-cache
    state: absent
    wait: true

- name: Delete the persistent one after a final backup
  trainium.eks.fsx_lustre:
    name: trn-rehearsal-data
    state: absent
    final_backup: true
  register: deleted

- name: Say which backup holds the data now
  ansible.builtin.debug:
    msg: "final backup {{ deleted.final_backup_id }}"
  when: deleted.final_backup_id
"""

RETURN = r"""
file_system:
  description:
    - The file system. Empty when O(state=absent) found none.
    - In check mode, for a file system that does not exist yet, the planned values with
      RV(file_system.file_system_id=null).
  returned: always
  type: dict
  contains:
    file_system_id:
      description: File system ID.
      type: str
      sample: fs-0123456789abcdef0
    name:
      description: The C(Name) tag.
      type: str
      sample: trn-rehearsal-data
    resource_arn:
      description: ARN of the file system.
      type: str
    lifecycle:
      description: C(CREATING), C(AVAILABLE), C(UPDATING), C(DELETING), C(FAILED), C(MISCONFIGURED) ...
      type: str
      sample: AVAILABLE
    failure_details:
      description: Why the file system FAILED, when it did.
      type: str
    dns_name:
      description: DNS name clients mount.
      type: str
      sample: fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com
    mount_name:
      description: Lustre mount name (C(mount -t lustre <dns_name>@tcp:/<mount_name>)).
      type: str
      sample: abcdef12
    storage_capacity:
      description: Storage capacity in GiB.
      type: int
      sample: 1200
    storage_type:
      description: C(SSD).
      type: str
    deployment_type:
      description: Deployment type.
      type: str
      sample: PERSISTENT_1
    per_unit_storage_throughput:
      description: MB/s per TiB.
      type: int
      sample: 200
    data_compression_type:
      description: C(NONE) or C(LZ4).
      type: str
    weekly_maintenance_start_time:
      description: Maintenance window start, C(d:HH:MM) UTC.
      type: str
    automatic_backup_retention_days:
      description: Days automatic backups are kept (0 - none); null when AWS reports none (scratch).
      type: int
      sample: 7
    daily_automatic_backup_start_time:
      description: Start of the daily backup window, C(HH:MM) UTC.
      type: str
      sample: "03:00"
    file_system_type_version:
      description: Lustre version.
      type: str
      sample: "2.15"
    kms_key_id:
      description: KMS key of a persistent file system.
      type: str
    vpc_id:
      description: VPC of the file system.
      type: str
    subnet_ids:
      description: Subnets (one for FSx for Lustre).
      type: list
      elements: str
    subnet_id:
      description: The first (only) subnet.
      type: str
    security_group_ids:
      description:
        - Security groups of the file system's network interfaces, sorted; null when AWS
          reports no interfaces yet.
      type: list
      elements: str
    network_interface_ids:
      description: Network interfaces of the file system.
      type: list
      elements: str
    data_repository:
      description: The linked S3 data repository, null when none.
      type: dict
      contains:
        import_path:
          description: S3 import path.
          type: str
        export_path:
          description: S3 export path.
          type: str
        auto_import_policy:
          description: Auto-import policy.
          type: str
    tags:
      description: Tags of the file system.
      type: dict
restored_from_backup:
  description: The backup the file system was created from (or would be, in check mode); null when none.
  returned: when the task created the file system (or would)
  type: str
  sample: backup-0123456789abcdef0
  version_added: 0.4.0
final_backup_id:
  description:
    - ID of the final backup FSx takes before it deletes the file system; null when none was asked,
      none was possible, or nothing was deleted.
  returned: with O(state=absent)
  type: str
  sample: backup-0123456789abcdef0
immutable_differences:
  description:
    - Differences between the options and the file system that AWS cannot change in place.
      The task fails when there are any.
  returned: on failure because of them
  type: list
  elements: str
  sample: ["deployment_type: PERSISTENT_1 -> PERSISTENT_2"]
diff:
  description: The file system before and after, with C(--diff).
  returned: when diff mode is on
  type: dict
"""

import time

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_fsx as fsx


class FsxLustre:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.client = module.client("fsx")
        self._ec2 = None
        self._groups = {}
        self.changed = False
        self.diff = {"before": {}, "after": {}}

    @property
    def ec2(self):
        if self._ec2 is None:
            self._ec2 = self.module.client("ec2")
        return self._ec2

    def security_groups(self, fs):
        """Security groups of the file system's network interfaces (asked once per file system)."""
        interfaces = tuple(fs.get("NetworkInterfaceIds") or ())
        if not interfaces:
            return None
        if interfaces not in self._groups:
            self._groups[interfaces] = fsx.security_groups_of(self.ec2, interfaces)
        return self._groups[interfaces]

    def summary(self, fs):
        groups = self.security_groups(fs) if fs and fs.get("FileSystemId") else None
        if groups is None and fs and fs.get("FileSystemId") is None:
            groups = list(self.params.get("security_group_ids") or [])
        return fsx.summarize(fs, groups)

    def find(self):
        """(the live file system or None, those being deleted); fails the module (returns None) when the name is taken twice."""
        live, deleting = fsx.find_by_name(fsx.describe_file_systems(self.client), self.params["name"])
        if len(live) > 1:
            ids = ", ".join(sorted(fs["FileSystemId"] for fs in live))
            self.module.fail_json(msg=f"name: {len(live)} FSx for Lustre file systems have the Name tag {self.params['name']!r} ({ids}); "
                                      "delete all but one or choose another name")
            return None
        return (live[0] if live else None), deleting

    def exit(self, fs, **extra):
        result = {"changed": self.changed, "file_system": self.summary(fs) if fs else {}}
        if self.module._diff:  # pylint: disable=protected-access
            result["diff"] = self.diff
        self.module.exit_json(**result, **extra)

    # ------------------------------------------------------------- present

    def present(self):
        found = self.find()
        if found is None:
            return
        current = found[0]
        if current is None:
            self.create()
        elif current.get("Lifecycle") == fsx.FAILED:
            self.module.fail_json(
                msg=f"FSx file system {current['FileSystemId']} ({self.params['name']}) is FAILED: {fsx.failure_reason(current)}; "
                    "delete it (state=absent) and run again",
                file_system=self.summary(current),
            )
        else:
            self.update(current)

    def create(self):
        planned = fsx.planned_file_system(self.params)
        self.changed = True
        self.diff["after"] = fsx.summarize(planned, list(self.params.get("security_group_ids") or []))
        backup_id = self.backup_to_restore()
        if backup_id is False:
            return
        if self.module.check_mode:
            self.exit(planned, restored_from_backup=backup_id)
            return
        if not self.params.get("subnet_id"):
            self.module.fail_json(msg=f"subnet_id: required to create FSx for Lustre file system {self.params['name']!r}; got none")
            return
        if backup_id:
            fs = fsx.create_file_system_from_backup(self.client, fsx.restore_request(self.params, backup_id))
        else:
            fs = fsx.create_file_system(self.client, fsx.create_request(self.params))
        if self.params["wait"]:
            fs = fsx.wait_for(self.client, fs["FileSystemId"], self.params["wait_timeout"])
        self.diff["after"] = self.summary(fs)
        self.exit(fs, restored_from_backup=backup_id)

    def backup_to_restore(self):
        """The ID of the backup to create the file system from: None for an empty one; fails the module when it cannot be used."""
        wanted = self.params.get("restore_from_backup")
        if not wanted:
            return None
        if wanted == fsx.LATEST_BACKUP:
            backup = fsx.newest_backup(fsx.describe_backups(self.client), self.params["name"], self.params.get("restore_match_tags"))
            if backup is None:
                common.warn(self.module, f"restore_from_backup: no AVAILABLE backup of file system {self.params['name']!r} found; "
                                         "creating it empty")
                return None
        else:
            backup = next(iter(fsx.describe_backups(self.client, [wanted])), None)
        problem = fsx.restore_problem(backup, self.params) if backup else f"restore_from_backup: backup {wanted} not found"
        if problem:
            self.module.fail_json(msg=problem)
            return False
        return backup["BackupId"]

    def update(self, current):
        groups = self.security_groups(current)
        plan = fsx.plan_update(current, self.params, groups)
        before = fsx.summarize(current, groups)
        if plan["errors"]:
            self.module.fail_json(msg=" | ".join(plan["errors"]), file_system=before)
            return
        if plan["immutable"]:
            self.module.fail_json(
                msg=f"FSx file system {current['FileSystemId']} ({self.params['name']}) differs in what AWS cannot change in place: "
                    f"{'; '.join(plan['immutable'])}. Delete it (state=absent) and create it again, or change the options back",
                immutable_differences=plan["immutable"],
                file_system=before,
            )
            return
        self.diff["before"] = before
        self.diff["after"] = fsx.summarize(fsx.apply_plan(current, plan), groups)
        if not plan["changed"]:
            if self.params["wait"] and current.get("Lifecycle") != fsx.AVAILABLE and not self.module.check_mode:
                current = fsx.wait_for(self.client, current["FileSystemId"], self.params["wait_timeout"])
            self.exit(current)
            return
        self.changed = True
        if self.module.check_mode:
            self.exit(fsx.apply_plan(current, plan))
            return
        fs_id = current["FileSystemId"]
        if plan["update"]:
            if current.get("Lifecycle") != fsx.AVAILABLE:
                if not self.params["wait"]:
                    self.module.fail_json(
                        msg=f"FSx file system {fs_id} is {current.get('Lifecycle')}; AWS updates it only when AVAILABLE. "
                            "Run again later or with wait=true",
                        file_system=before,
                    )
                    return
                fsx.wait_for(self.client, fs_id, self.params["wait_timeout"])
            fsx.update_file_system(self.client, fs_id, plan["update"])
        common.update_tags(self.client, current["ResourceARN"], plan["tags_to_set"], plan["tags_to_remove"])
        if self.params["wait"]:
            fs = fsx.wait_for(self.client, fs_id, self.params["wait_timeout"])
        else:
            fs = fsx.describe_file_system(self.client, fs_id) or fsx.apply_plan(current, plan)
        self.diff["after"] = self.summary(fs)
        self.exit(fs)

    # -------------------------------------------------------------- absent

    def absent(self):
        found = self.find()
        if found is None:
            return
        current, deleting = found
        if current is None:
            # Already deleted, or being deleted: nothing to do but (maybe) wait.
            if self.params["wait"] and not self.module.check_mode:
                for fs in deleting:
                    fsx.wait_for(self.client, fs["FileSystemId"], self.params["wait_timeout"], gone=True)
                deleting = []
            self.exit(deleting[0] if deleting else None, final_backup_id=None)
            return
        self.changed = True
        self.diff["before"] = self.summary(current)
        if self.module.check_mode:
            self.exit(current, final_backup_id=None)
            return
        fs_id = current["FileSystemId"]
        timeout = self.params["wait_timeout"]
        deadline = time.monotonic() + timeout
        if current.get("Lifecycle") in fsx.BUSY_STATES:
            # AWS refuses to delete a file system that is being created or updated:
            # wait that out whatever wait says (a run interrupted during creation).
            settled = fsx.wait_until_settled(self.client, fs_id, timeout)
            if settled is None:
                self.exit(dict(current, Lifecycle=fsx.DELETING), final_backup_id=None)
                return
            current = settled
        backup_id = None
        if current.get("Lifecycle") != fsx.DELETING:
            if self.params["final_backup"] and not fsx.final_backup_possible(current):
                self._warn_no_final_backup(current)
            answer = fsx.delete_file_system(self.client, current, timeout=max(0, deadline - time.monotonic()),
                                            final_backup=self.params["final_backup"], tags=self.params.get("final_backup_tags"))
            backup_id = fsx.final_backup_id(answer)
        gone = dict(current, Lifecycle=fsx.DELETING)
        if self.params["wait"]:
            for fs in [current] + deleting:
                fsx.wait_for(self.client, fs["FileSystemId"], self.params["wait_timeout"], gone=True)
        self.exit(gone, final_backup_id=backup_id)

    def _warn_no_final_backup(self, fs):
        lustre = fs.get("LustreConfiguration") or {}
        if lustre.get("DeploymentType") not in fsx.PERSISTENT_TYPES:
            return  # scratch: nothing to keep, nothing to say
        reason = ("it is linked to an S3 data repository" if lustre.get("DataRepositoryConfiguration")
                  else f"it is {fs.get('Lifecycle')}, not AVAILABLE")
        common.warn(self.module, f"FSx file system {fs['FileSystemId']} ({self.params['name']}) is deleted without a final backup: {reason}")


def main():
    argument_spec = dict(
        name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        deployment_type=dict(type="str", choices=list(common.FSX_DEPLOYMENT_TYPES)),
        storage_capacity=dict(type="int"),
        per_unit_storage_throughput=dict(type="int"),
        subnet_id=dict(type="str"),
        security_group_ids=dict(type="list", elements="str"),
        file_system_type_version=dict(type="str", default="2.15", choices=["2.10", "2.12", "2.15"]),
        data_compression_type=dict(type="str", default="LZ4", choices=list(fsx.COMPRESSION_TYPES)),
        kms_key_id=dict(type="str"),
        weekly_maintenance_start_time=dict(type="str"),
        automatic_backup_retention_days=dict(type="int"),
        daily_automatic_backup_start_time=dict(type="str"),
        final_backup=dict(type="bool", default=True),
        final_backup_tags=dict(type="dict"),
        restore_from_backup=dict(type="str"),
        restore_match_tags=dict(type="dict"),
        data_repository=dict(
            type="dict",
            options=dict(
                import_path=dict(type="str", required=True),
                export_path=dict(type="str"),
                auto_import_policy=dict(type="str", default="NEW_CHANGED_DELETED", choices=list(fsx.AUTO_IMPORT_POLICIES)),
            ),
        ),
        **common.tags_and_wait_options(wait_timeout=1800),
    )
    module = AnsibleAWSModule(
        argument_spec=argument_spec,
        supports_check_mode=True,
        required_if=[("state", "present", ("deployment_type", "storage_capacity"))],
    )
    errors = fsx.validation_errors(module.params)
    if errors:
        module.fail_json(msg=f"{len(errors)} problem(s) with the fsx_lustre options: {' | '.join(errors)}", problems=errors)
    else:
        manager = FsxLustre(module)
        common.fail_on_aws_error(module, manager.present if module.params["state"] == "present" else manager.absent)


if __name__ == "__main__":
    main()
