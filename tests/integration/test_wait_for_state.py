# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.wait_for_state against the rehearsal: a file system that is CREATING for a few seconds.

The rehearsal's FSx keeps a new file system CREATING for
TRAINIUM_REHEARSAL_FSX_CREATE_SECONDS (3 s), as AWS does for minutes.
"""

from __future__ import annotations

import re

PLAYBOOK = """
- name: Wait for a file system
  hosts: trainium
  gather_facts: false
  module_defaults:
    group/trainium.eks.aws:
      region: us-west-2
  tasks:
    - name: Create the file system without waiting
      trainium.eks.fsx_lustre: &args
        name: wait-itest
        deployment_type: SCRATCH_2
        storage_capacity: 1200
        subnet_id: {subnet}
        security_group_ids: [{group}]
        wait: false
      register: created

    - name: Wait for it with progress lines
      trainium.eks.wait_for_state:
        module: trainium.eks.fsx_lustre
        module_args: *args
        state_path: file_system.lifecycle
        ready: [AVAILABLE]
        failed: [FAILED, MISCONFIGURED]
        what: file system wait-itest
        typical: 5-15 min on AWS
        delay: 1
        timeout: {timeout}
      register: waited

    - name: Report
      ansible.builtin.debug:
        msg: >-
          WAITED created={{{{ created.file_system.lifecycle }}}} state={{{{ waited.state }}}} polls={{{{ waited.polls }}}}
          lifecycle={{{{ waited.file_system.lifecycle }}}} changed={{{{ waited.changed }}}} END
"""


def _network(aws):
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.44.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.44.0.0/24", AvailabilityZone="us-west-2b")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="wait-itest", Description="Lustre", VpcId=vpc)["GroupId"]
    return subnet, group


def _playbook(tmp_path, aws, timeout):
    subnet, group = _network(aws)
    path = tmp_path / "wait.yml"
    path.write_text(PLAYBOOK.format(subnet=subnet, group=group, timeout=timeout))
    return str(path)


def _reported(result):
    found = re.search(r"WAITED (.*?) END", result.text)
    assert found, result
    return dict(pair.split("=", 1) for pair in found.group(1).split())


def test_waits_with_progress_lines_and_no_retry_lines(aws, run_playbook, tmp_path):
    result = run_playbook(_playbook(tmp_path, aws, timeout=60))
    assert result.rc == 0, result
    reported = _reported(result)
    assert reported["created"] == "CREATING"
    assert reported["state"] == reported["lifecycle"] == "AVAILABLE"
    assert int(reported["polls"]) >= 2 and reported["changed"] == "False"
    assert re.search(r"waiting for file system wait-itest: CREATING, \d+s so far \(typically 5-15 min on AWS\)", result.output), result
    assert "file system wait-itest: AVAILABLE after" in result.output
    assert "FAILED" not in result.output and "RETRYING" not in result.output
    (fs,) = aws.client("fsx").describe_file_systems()["FileSystems"]
    assert fs["Lifecycle"] == "AVAILABLE"


def test_timeout_fails_with_the_state_and_the_time(aws, run_playbook, tmp_path):
    result = run_playbook(_playbook(tmp_path, aws, timeout=1))
    assert result.rc != 0
    assert "file system wait-itest is still CREATING after" in result.text
    assert "(timeout 1s; typically 5-15 min on AWS)" in result.text
