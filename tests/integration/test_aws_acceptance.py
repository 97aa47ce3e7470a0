# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/aws_acceptance.yml on the rehearsal, as a user with an account would run it on AWS.

Refused without the confirmation (rc 2, one line, nothing created); with
it, the supervisor builds the acceptance deployment, tears it down and
checks that nothing is left, and the trace of its AWS calls reads with
tools/compare-trace.py; told to stop in the middle, the supervisor still
tears down. Every assertion on the account reads the account (moto), not the
playbook's report. Group shared_stack (the platform stage reaches the shared
kube-apiserver with an EKS token), holding shared_kube while the pool's
fake nodes follow the acceptance node group.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = pathlib.Path(os.environ.get("VENV", ROOT / ".venv")) / "bin"
ACCEPTANCE = "playbooks/aws_acceptance.yml"
CLUSTER = "trn-rehearsal"
TRN_NODES = ["trn1-0", "trn1-1"]
pytestmark = pytest.mark.xdist_group("shared_stack")


def pool_nodes(kube):
    nodes = kube.json("get", "nodes", "-l", "trainium.eks/pool=trn1")["items"]
    return sorted(node["metadata"]["name"] for node in nodes)


@pytest.fixture()
def acceptance(module_stack, local_vars, group_lock, kube, wait_until):
    """The shared account emptied, the run's root and kubeconfig in a temporary directory; afterwards the pool's
    fake nodes back at the inventory's two (a failed run is torn down here, so the next tests find an empty account)."""
    env, tmp = module_stack.env, module_stack.tmp
    shutil.rmtree(pathlib.Path(env["TRAINIUM_REHEARSAL_SHARED_DIR"]) / local_vars["trainium_job"]["namespace"], ignore_errors=True)
    root = tmp / "acceptance"
    args = ["-e", f"trainium_acceptance_root={root}", "-e", f"trainium_kubeconfig={tmp / 'kube' / (CLUSTER + '.yaml')}"]
    with group_lock("shared_kube"):
        yield module_stack, root, args
        if module_stack.aws.resources() != module_stack.baseline:
            module_stack.run("site.yml", args=args[2:] + ["--tags", "teardown"])
        wait_until(lambda: pool_nodes(kube) == TRN_NODES, timeout=120, interval=1)


@pytest.fixture(scope="module")
def module_stack(module_stack):  # pylint: disable=redefined-outer-name
    module_stack.baseline = module_stack.aws.resources()
    return module_stack


def run_dirs(root):
    return sorted(path for path in root.glob("*") if path.is_dir())


def test_without_the_confirmation_it_prints_the_estimate_and_creates_nothing(acceptance):
    stack, root, args = acceptance
    refused = stack.run(ACCEPTANCE, args=args, timeout=300)
    assert refused.rc == 2, refused
    assert "total: " in refused.text and " USD/h; at most 3 h of wall time" in refused.text
    errors = [line for line in refused.output.splitlines() if line.startswith("[ERROR]")]
    assert len(errors) == 1, refused
    assert 'trainium_acceptance_confirm: got ""; allowed: the cluster\'s name, -e trainium_acceptance_confirm=trn-rehearsal' in errors[0]
    assert "nothing was created" in errors[0]
    wrong = stack.run(ACCEPTANCE, args=args + ["-e", "trainium_acceptance_confirm=trn-bert"], timeout=300)
    assert wrong.rc == 2 and 'trainium_acceptance_confirm: got "trn-bert"' in wrong.text, wrong
    clash = stack.run(ACCEPTANCE, args=args + ["-e", f"trainium_acceptance_confirm={CLUSTER}", "-e",
                                               '{"trainium_acceptance_extra_vars": {"trainium_cluster_name": "trn-prod"}}'], timeout=300)
    assert clash.rc == 2 and 'trainium_acceptance_extra_vars: got {"trainium_cluster_name": "trn-prod"}; allowed: a mapping of variables ' \
        'other than' in clash.text, clash
    assert stack.aws.resources() == stack.baseline
    assert not run_dirs(root)


def test_confirmed_on_a_deployment_that_exists_it_refuses_to_adopt_it(acceptance):
    stack, root, args = acceptance
    ec2 = stack.aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=[
        {"ResourceType": "vpc", "Tags": [{"Key": "trainium.eks/cluster", "Value": CLUSTER}]}])["Vpc"]["VpcId"]
    try:
        refused = stack.run(ACCEPTANCE, args=args + ["-e", f"trainium_acceptance_confirm={CLUSTER}"], timeout=300)
        assert refused.rc == 2, refused
        assert (f'trainium_cluster_name: got "{CLUSTER}"; allowed: a deployment with nothing in the account yet' in refused.text
                and f"found: vpcs: {vpc}" in refused.text), refused
        assert not run_dirs(root)
    finally:
        ec2.delete_vpc(VpcId=vpc)


def test_confirmed_it_builds_trains_tears_down_leaves_nothing_and_writes_a_trace(acceptance):
    stack, root, args = acceptance
    done = stack.run(ACCEPTANCE, args=args + ["-e", f"trainium_acceptance_confirm={CLUSTER}"], timeout=2400)
    assert done.rc == 0, done
    # The account, read here: what the run built is gone.
    assert stack.aws.resources() == stack.baseline
    (directory,) = run_dirs(root)
    result = json.loads((directory / "result.json").read_text(encoding="utf-8"))
    assert [(phase["phase"], phase["rc"]) for phase in result["phases"]] == [("site", 0), ("teardown", 0), ("verify", 0)]
    assert result["interrupted"] is None
    site_log = (directory / "site.log").read_text(encoding="utf-8")
    assert "TASK [trainium.eks.training_job" in site_log and "failed=0" in site_log
    assert "waiting for the acceptance run" in done.output and "teardown: PLAY [Teardown" in done.output
    # The acceptance sizes went to site.yml: one node, SCRATCH_2, the job on one node.
    calls = [json.loads(line) for line in (directory / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    created = {(call["service"], call["operation"]): call["params"] for call in calls if call["error"] is None}
    assert created[("eks", "CreateNodegroup")]["scalingConfig"]["desiredSize"] in (1, 2)  # the system pool has 2
    trn = [call["params"] for call in calls if call["operation"] == "CreateNodegroup" and call["params"]["nodegroupName"].endswith("-trn1")]
    assert trn and trn[0]["scalingConfig"] == {"minSize": 1, "maxSize": 1, "desiredSize": 1}
    assert created[("fsx", "CreateFileSystem")]["LustreConfiguration"]["DeploymentType"] == "SCRATCH_2"
    assert ("eks", "DeleteCluster") in created and ("ec2", "DeleteVpc") in created
    assert all(call["params"].get("UserData") in (None, "<redacted>") for call in calls)
    # The trace reads with the compare tool: the same against itself, a difference once a call is missing.
    tool = [sys.executable, str(ROOT / "tools" / "compare-trace.py")]
    same = subprocess.run(tool + [str(directory / "trace.jsonl")] * 2, capture_output=True, text=True, check=False)
    assert same.returncode == 0 and same.stdout.strip().endswith("0 difference(s)"), same.stdout + same.stderr
    lacking = directory / "lacking.jsonl"
    lacking.write_text("".join(json.dumps(call) + "\n" for call in calls if call["operation"] != "CreateVpc"), encoding="utf-8")
    differ = subprocess.run(tool + [str(directory / "trace.jsonl"), str(lacking)], capture_output=True, text=True, check=False)
    assert differ.returncode == 1
    assert any(line.startswith("ec2 CreateVpc (ok)") and "1 call(s) in the first trace, 0 in the second" in line
               for line in differ.stdout.splitlines()), differ.stdout


def test_a_supervisor_told_to_stop_interrupts_site_and_still_tears_down(acceptance):
    stack, root, args = acceptance
    cmd = [str(VENV_BIN / "ansible-playbook"), ACCEPTANCE, "-i", "inventories/local", *args,
           "-e", f"trainium_acceptance_confirm={CLUSTER}"]
    with subprocess.Popen(cmd, cwd=ROOT, env=stack.run.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as outer:
        deadline = time.monotonic() + 600
        state = ""
        while time.monotonic() < deadline and "PLAY [Infrastructure" not in state:
            time.sleep(2)
            found = run_dirs(root)
            state = (found[-1] / "state").read_text(encoding="utf-8") if found and (found[-1] / "state").exists() else ""
        assert "site: PLAY [Infrastructure" in state, state
        time.sleep(5)  # into the stage: the network is being made
        directory = run_dirs(root)[-1]
        os.kill(int((directory / "pid").read_text(encoding="utf-8")), signal.SIGTERM)
        output = outer.communicate(timeout=1200)[0]
    assert outer.returncode == 2, output
    result = json.loads((directory / "result.json").read_text(encoding="utf-8"))
    assert result["interrupted"] == "SIGTERM during site"
    assert result["site_rc"] != 0 and result["teardown_rc"] == 0 and result["verify_rc"] == 0
    assert "interrupted (SIGTERM during site)" in " ".join(output.split())
    assert stack.aws.resources() == stack.baseline
