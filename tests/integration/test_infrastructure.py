# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/infrastructure.yml, playbooks/teardown.yml and site.yml on this worker's own moto: check mode on an empty
account, a teardown after an interrupted run and of an empty account, bad variables refused before anything exists.

The whole pipeline from an empty account to training and back is
tests/integration/test_site_end_to_end.py (one build, its checks as tests of
their own). Every assertion reads what exists in the account, never the
playbook's own report. The tests that build or tear down also record every
AWS request of their runs and check it against the operator's IAM policy of
its stage (docs/iam-policy.md; ``aws_calls``).
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import os
import signal
import subprocess
import threading

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = pathlib.Path(os.environ.get("VENV", ROOT / ".venv")) / "bin"
_IAM_SPEC = importlib.util.spec_from_file_location("iam_policy", ROOT / "tests" / "iam" / "iam_policy.py")
iam_policy = importlib.util.module_from_spec(_IAM_SPEC)
_IAM_SPEC.loader.exec_module(iam_policy)

INFRASTRUCTURE = "playbooks/infrastructure.yml"
TEARDOWN = "playbooks/teardown.yml"
CLUSTER = "trn-rehearsal"


@pytest.fixture()
def kubeconfig(tmp_path):
    return str(tmp_path / "kube" / f"{CLUSTER}.yaml")


def run_args(kubeconfig):
    return ["-e", f"trainium_kubeconfig={kubeconfig}"]


@pytest.fixture()
def aws_calls(rehearsal, tmp_path):
    """The record of the AWS requests of this test's playbook runs (tests/iam/iam_policy.py)."""
    return iam_policy.record_calls(rehearsal, tmp_path / "aws-calls.jsonl")


def assert_policies_allow(aws_calls, aws, local_vars):
    """docs/iam/: each stage's policy allows every request of the stage."""
    iam_policy.assert_record_allowed(aws_calls, aws, local_vars, CLUSTER)


def test_check_mode_on_an_empty_account_creates_nothing(aws, aws_calls, run_playbook, kubeconfig, local_vars):
    baseline = aws.resources()
    planned = run_playbook(INFRASTRUCTURE, args=run_args(kubeconfig) + ["--check", "--diff"])
    assert planned.rc == 0, planned
    assert planned.recap["changed"] >= 6, planned.changed_tasks
    # One would-be change per stage at least.
    for role in ("network", "eks_cluster", "trn_launch_template", "trn_nodegroup", "ecr", "fsx_lustre"):
        assert any(name.startswith(f"trainium.eks.{role} : ") for name in planned.changed_tasks), role
    # One summary at the end (issue 9): what would exist and the hourly cost; no retry or deprecation noise
    # from the collection's own waits.
    assert "Check mode: nothing was changed; what a real run would leave:" in planned.text
    assert "- node pool trn1: 2 x trn1.32xlarge ON_DEMAND in us-west-2b" in planned.text
    assert "Trainium nodes cost about $43.00/h at on-demand list prices" in planned.text
    assert "RETRYING" not in planned.output
    assert aws.resources() == baseline
    assert not os.path.exists(kubeconfig)
    assert_policies_allow(aws_calls, aws, local_vars)


def test_teardown_after_an_interrupted_run_empties_the_account(aws, kubeconfig, run_playbook, wait_until, aws_calls, local_vars):
    """SIGINT the playbook once the cluster exists, as a user pressing Ctrl-C would.

    On this worker's own moto: the shared stack's token authenticator knows only the shared moto's clusters, so
    the access check is off (eks_cluster_verify_access) and the teardown finds no cluster that answers its token,
    as after a run interrupted before the kubeconfig works."""
    baseline = aws.resources()
    cmd = [str(VENV_BIN / "ansible-playbook"), INFRASTRUCTURE, "-i", "inventories/local", "-e", "eks_cluster_verify_access=false"] + run_args(kubeconfig)
    process = subprocess.Popen(cmd, cwd=ROOT, env=run_playbook.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    # Read as a terminal would, from the start: a full pipe would stop the playbook in the middle of a write.
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)
    reader.start()
    eks = aws.client("eks")
    presses = 0
    try:
        wait_until(lambda: process.poll() is not None or CLUSTER in eks.list_clusters()["clusters"], timeout=240, interval=0.5,
                   what=f"the playbook to create EKS cluster {CLUSTER} (or to end)")
        assert process.poll() is None, "the playbook ended before it could be interrupted:\n" + "".join(lines)[-3000:]
        # Ctrl-C, and again if the playbook goes on (once, a CI run's playbook ran on to its end after one
        # SIGINT, rc 0): a user presses it until the run stops.
        for presses in range(1, 6):
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=3)
                break
            except subprocess.TimeoutExpired:
                continue
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        reader.join(timeout=30)
    output = "".join(lines)
    assert process.returncode != 0, f"rc {process.returncode} after {presses} SIGINT(s):\n{output[-3000:]}"
    # Interrupted, not failed: Ansible's own "User interrupted execution" (rc 99), or, when Ansible swallowed the
    # first Ctrl-C (raised while a finalizer ran: "Exception ignored ... KeyboardInterrupt", seen in CI) and had its
    # handler back to Python's default by the next one, the end by SIGINT itself.
    assert "User interrupted execution" in output or process.returncode == -signal.SIGINT, \
        f"rc {process.returncode} after {presses} SIGINT(s):\n{output[-3000:]}"
    # Something was left behind, or the test proves nothing.
    assert aws.resources() != baseline

    down = run_playbook(TEARDOWN, args=run_args(kubeconfig))
    assert down.rc == 0, down
    assert aws.resources() == baseline
    assert "RETRYING" not in down.output
    # No cluster that answers this moto's token: the shared cluster's objects are left alone.
    assert "Remove TensorBoard" not in down.output, down.output[-3000:]
    assert_policies_allow(aws_calls, aws, local_vars)  # the teardown (the interrupted run uses run_playbook.env)


def test_teardown_of_an_empty_account_changes_nothing(aws, run_playbook, kubeconfig):
    baseline = aws.resources()
    down = run_playbook(TEARDOWN, args=run_args(kubeconfig))
    assert down.rc == 0, down
    assert down.recap["changed"] == 0, down.changed_tasks
    assert aws.resources() == baseline


def test_teardown_refuses_bad_variables_before_any_call(aws, run_playbook):
    baseline = aws.resources()
    down = run_playbook(TEARDOWN, args=["-e", "trainium_cluster_name=-bad-"])
    assert down.rc != 0
    assert "trainium_cluster_name: got '-bad-'" in down.text
    assert aws.resources() == baseline


@pytest.mark.parametrize("extra, message", [
    pytest.param({"eks_cluster_public_access_cidrs": ["0.0.0.0/0"]},
                 "eks_cluster_public_access_cidrs[0]: got '0.0.0.0/0' (str); allowed: a block of /16 or narrower", id="api-open-to-the-world"),
    pytest.param({"eks_cluster_public_access_cidrs": []},
                 "eks_cluster_public_access_cidrs: got [] (list); allowed: the CIDR blocks that may reach the public Kubernetes API", id="api-cidrs-empty"),
    pytest.param({"network_nat_gateways": "none"}, "network_nat_gateways", id="network-nat-mode"),
    pytest.param({"ecr_keep_images": 0}, "ecr_keep_images: got 0 (int); allowed: an integer from 1 to 10000", id="ecr-keep-images"),
])
def test_bad_role_variables_stop_the_run_before_anything_is_created(aws, run_playbook, kubeconfig, extra, message):
    baseline = aws.resources()
    result = run_playbook(INFRASTRUCTURE, args=run_args(kubeconfig) + ["-e", json.dumps(extra)])
    assert result.rc != 0
    assert message in result.text, result
    assert aws.resources() == baseline


def test_opening_the_api_to_the_world_needs_an_explicit_yes(aws, run_playbook, kubeconfig):
    extra = {"eks_cluster_public_access_cidrs": ["0.0.0.0/0"], "eks_cluster_public_access_from_anywhere": True}
    result = run_playbook(INFRASTRUCTURE, args=run_args(kubeconfig) + ["-e", json.dumps(extra), "--check"])
    assert result.rc == 0, result
    assert "problem(s) in the variables" not in result.text


# Bad values of at least two variables of every role of the stage, all given at
# once: the validation pass names each one on a line of its own, and nothing
# else, before any AWS call.
BAD_ROLE_VARIABLES = {
    "trn_launch_template_metadata_hop_limit": (99, "trn_launch_template_metadata_hop_limit: got 99 (int); allowed: an integer from 1 to 64"),
    "trn_launch_template_ami_release": ("v1", "trn_launch_template_ami_release: got 'v1' (str); allowed: 'recommended' or a published"),
    "trn_nodegroup_ami_type": ("AL2_x86_64", "trn_nodegroup_ami_type: got 'AL2_x86_64' (str); allowed: one of AL2023_x86_64_NEURON"),
    "trn_nodegroup_wait_delay": (0, "trn_nodegroup_wait_delay: got 0 (int); allowed: an integer from 1 to 600"),
    "fsx_lustre_storage_capacity_gib": (1300, "fsx_lustre_storage_capacity_gib: got 1300 (int); allowed: 1200, 2400 or a multiple of 2400"),
    "fsx_lustre_data_compression_type": ("GZIP", "fsx_lustre_data_compression_type: got 'GZIP' (str); allowed: one of NONE, LZ4"),
    "fsx_lustre_per_unit_storage_throughput": (125, "fsx_lustre_per_unit_storage_throughput: got 125 (int); allowed: one of 50, 100, 200"),
    "eks_cluster_logging": (["api", "everything"], "eks_cluster_logging: got ['api', 'everything'] (list); allowed: any of api, audit"),
    "eks_cluster_kms_deletion_window_days": (3, "eks_cluster_kms_deletion_window_days: got 3 (int); allowed: an integer from 7 to 30"),
    "eks_cluster_upgrade_policy": ("FOREVER", "eks_cluster_upgrade_policy: got 'FOREVER' (str); allowed: one of STANDARD, EXTENDED"),
    "eks_cluster_admin_principal_arns": (["arn:aws:sts::111122223333:assumed-role/admins/alice"],
                                         "eks_cluster_admin_principal_arns[0]: got 'arn:aws:sts::111122223333:assumed-role/admins/alice' (str); "
                                         "allowed: the ARN of an IAM role or user"),
    "network_vpc_cidr": ("10.0.0.0/8", "network_vpc_cidr: got '10.0.0.0/8' (str); allowed: an IPv4 network in CIDR notation"),
    "network_nat_gateways": ("none", "network_nat_gateways: got 'none' (str); allowed: one of single, per_zone"),
    "ecr_keep_images": (0, "ecr_keep_images: got 0 (int); allowed: an integer from 1 to 10000"),
    "ecr_encryption_type": ("DES", "ecr_encryption_type: got 'DES' (str); allowed: one of AES256, KMS"),
    "preflight_lookup_capacity_reservations": ("perhaps", "preflight_lookup_capacity_reservations: got 'perhaps' (str); allowed: a boolean"),
}


def test_site_refuses_every_bad_role_variable_at_once_before_anything_exists(aws, run_playbook):
    baseline = aws.resources()
    extra = {name: value for name, (value, _line) in BAD_ROLE_VARIABLES.items()}
    result = run_playbook("site.yml", args=["-e", json.dumps(extra)])
    assert result.rc != 0, result
    assert f"{len(BAD_ROLE_VARIABLES)} problem(s) in the variables; nothing was created" in result.output, result
    lines = [line.strip() for line in result.output.splitlines()]
    for name, (_value, line) in BAD_ROLE_VARIABLES.items():
        assert any(found.startswith(line) for found in lines), (name, result)
    # One line per problem and no argument spec dump, nothing after the validation play.
    assert "argument_spec" not in result.output and "Validating arguments against arg spec" not in result.output
    assert "PLAY [Preflight" not in result.output
    # The validation pass is the run's first task (it also checks the Ansible version).
    assert result.recap["failed"] == 1 and result.recap["ok"] == 0, result
    assert aws.resources() == baseline


def test_site_runs_preflight_once(aws, run_playbook):
    result = run_playbook("site.yml", args=["--check", "--tags", "infrastructure"])
    assert result.rc == 0, result
    assert result.output.count("PLAY [Preflight") == 1
    assert result.output.count("Look up the zones and figures of the Trainium instance types") == 1
