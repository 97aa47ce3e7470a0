# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium.eks.wait_for_state against the rehearsal: a file system that is CREATING for a few seconds; a
subnet that is deleted a few seconds later (gone) and a VPC that AWS refuses to delete until then (retry_on).

The rehearsal's FSx keeps a new file system CREATING for
TRAINIUM_REHEARSAL_FSX_CREATE_SECONDS (3 s), as AWS does for minutes.
The roles' waits themselves run in the Molecule scenarios and in test_site_end_to_end.py.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = pathlib.Path(os.environ.get("VENV", ROOT / ".venv")) / "bin"

PLAY = """
- name: Wait
  hosts: trainium
  gather_facts: false
  module_defaults:
    group/trainium.eks.aws:
      region: us-west-2
  tasks:
"""

PLAYBOOK = PLAY + """
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
        ready: {ready}
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


def _playbook(tmp_path, aws, timeout, ready="[AVAILABLE]"):
    subnet, group = _network(aws)
    path = tmp_path / "wait.yml"
    path.write_text(PLAYBOOK.format(subnet=subnet, group=group, timeout=timeout, ready=ready))
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
    # A state the file system never reaches: on a loaded machine the 3 s of
    # CREATING may be over before the first poll, and the wait must still time out.
    result = run_playbook(_playbook(tmp_path, aws, timeout=1, ready="[UPDATING]"))
    assert result.rc != 0
    assert re.search(r"file system wait-itest is still (CREATING|AVAILABLE) after", result.text), result
    assert "(timeout 1s; typically 5-15 min on AWS)" in result.text


GONE_PLAYBOOK = PLAY + """
    - name: Wait until the first subnet is gone
      trainium.eks.wait_for_state:
        module: amazon.aws.ec2_vpc_subnet_info
        module_args:
          filters:
            subnet-id: {first}
        state_path: subnets.*.state
        gone: true
        what: subnet {first}
        delay: 1
        timeout: 60
      register: gone

    - name: Delete the VPC, again while its second subnet holds it
      trainium.eks.wait_for_state:
        module: amazon.aws.ec2_vpc_net
        module_args:
          vpc_id: {vpc}
          state: absent
        state_path: vpc.id
        ready: [null]
        retry_on: [DependencyViolation]
        what: VPC {vpc} (deleting)
        delay: 1
        timeout: 60
      register: deleted

    - name: Report
      ansible.builtin.debug:
        msg: >-
          WAITED gone_state={{{{ gone.state | length }}}} gone_polls={{{{ gone.polls }}}} deleted_polls={{{{ deleted.polls }}}}
          deleted_changed={{{{ deleted.changed }}}} END
"""


def test_gone_and_retry_on_wait_with_progress_lines_and_no_retry_lines(aws, run_playbook, tmp_path):
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.45.0.0/16")["Vpc"]["VpcId"]
    first, second = (ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.45.{i}.0/24", AvailabilityZone="us-west-2b")["Subnet"]["SubnetId"]
                     for i in (0, 1))
    path = tmp_path / "gone.yml"
    path.write_text(GONE_PLAYBOOK.format(vpc=vpc, first=first))
    # "AWS" deletes each subnet once the wait has said it waits for it (the subnets stand in for
    # NAT gateways going, network interfaces that hold a security group, ...).
    triggers = {f"waiting for subnet {first}:": first, f"waiting for VPC {vpc} (deleting): refused (DependencyViolation)": second}
    process = subprocess.Popen([str(VENV_BIN / "ansible-playbook"), str(path), "-i", "inventories/local"], cwd=ROOT, env=run_playbook.env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            for trigger in [t for t in triggers if t in line]:
                ec2.delete_subnet(SubnetId=triggers.pop(trigger))
        process.wait(timeout=120)
    finally:
        process.kill()
    output = "".join(lines)
    result = types.SimpleNamespace(rc=process.returncode, output=output, text=" ".join(output.split()))
    assert result.rc == 0 and not triggers, output[-4000:]
    reported = _reported(result)
    assert reported["gone_state"] == "0" and reported["deleted_changed"] == "True", output
    assert int(reported["gone_polls"]) >= 2 and int(reported["deleted_polls"]) >= 2, output
    assert f"subnet {first}: gone after" in result.output
    assert f"VPC {vpc} (deleting): gone after" in result.output
    assert "FAILED" not in result.output and "RETRYING" not in result.output
    assert vpc not in [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]]
