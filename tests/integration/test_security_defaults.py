# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The secure defaults of docs/security.md, read back from the rehearsal.

Each row of the table in docs/security.md names the test here that backs it.
The roles run with their defaults (only the kubeconfig path, the access check
through the shared kube-apiserver and the polling delays are set), and every
assertion is made on what moto lists afterwards, not on what the roles say.
The defaults of a whole deployment (logs, secrets encryption, IMDS, FSx
backups) and of its teardown are read back from the end-to-end test's own
deployment (tests/integration/test_site_end_to_end.py, assert_secure_defaults
and assert_secure_teardown): one build serves both.
"""

from __future__ import annotations

import os
import pathlib
import stat
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = "trn-rehearsal"
LOG_GROUP = f"/aws/eks/{CLUSTER}/cluster"
ALL_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]

EKS_CLUSTER = """
- name: The eks_cluster role alone
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.eks_cluster
"""


def quiet_vars(tmp_path):
    """What the tests set besides the defaults: where the kubeconfig goes, no access check, short polls."""
    return {
        "trainium_kubeconfig": str(tmp_path / "kube" / f"{CLUSTER}.yaml"),
        # The access check needs the shared stack's authenticator, which knows only the shared moto's clusters.
        "eks_cluster_verify_access": False,
        "fsx_lustre_wait_delay": 1,
        "eks_cluster_wait_delay": 1,
    }


def test_an_existing_cluster_gets_secrets_encryption_and_all_logs(aws, run_playbook, tmp_path):
    """A cluster made with the 0.3 defaults (three log types, no encryption) is brought to the new ones in place."""
    playbook = tmp_path / "eks_cluster.yml"
    playbook.write_text(EKS_CLUSTER)
    subnets = sorted(s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"] if s["AvailabilityZone"] in ("us-west-2b", "us-west-2d"))
    extra = dict(quiet_vars(tmp_path), eks_cluster_subnet_ids=subnets)
    old = run_playbook(str(playbook), extra_vars=dict(extra, eks_cluster_logging=["api", "audit", "authenticator"],
                                                      eks_cluster_secrets_encryption=False))
    assert old.rc == 0, old
    cluster = aws.client("eks").describe_cluster(name=CLUSTER)["cluster"]
    assert aws.control_plane_log_types(cluster) == ["api", "audit", "authenticator"] and not cluster.get("encryptionConfig")

    new = run_playbook(str(playbook), extra_vars=extra)
    assert new.rc == 0, new
    cluster = aws.client("eks").describe_cluster(name=CLUSTER)["cluster"]
    assert aws.control_plane_log_types(cluster) == sorted(ALL_LOG_TYPES)
    key = aws.secrets_key(cluster)
    assert key["KeyState"] == "Enabled"
    assert aws.log_group(LOG_GROUP)["retentionInDays"] == 90


def test_validation_pass_refuses_retentions_aws_refuses(run_playbook, tmp_path):
    """A log retention CloudWatch does not offer and a backup retention above 90 days stop the run before anything is made."""
    playbook = tmp_path / "validate.yml"
    playbook.write_text("""
- name: Validate the two roles
  hosts: trainium
  gather_facts: false
  tasks:
    - name: Check the variables
      trainium.eks.validate_variables:
        roles: [eks_cluster, fsx_lustre]
""")
    result = run_playbook(str(playbook), extra_vars={"eks_cluster_log_retention_days": 100, "fsx_lustre_automatic_backup_retention_days": 91})
    assert result.rc != 0, result
    assert ("eks_cluster_log_retention_days: got 100 (int); allowed: one of 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, "
            "731, 1827, 3653") in result.text
    assert "fsx_lustre_automatic_backup_retention_days: got 91 (int); allowed: one of 0, 1, 2," in result.text


def test_rehearsal_env_file_is_private(shared_rehearsal, tmp_path):
    """env.sh holds the registry password: rehearsal.sh writes it 0600, also over an older, readable one."""
    shared = pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "env.sh"
    assert stat.S_IMODE(shared.stat().st_mode) == 0o600, f"{shared} is {oct(stat.S_IMODE(shared.stat().st_mode))}"

    state = tmp_path / "state"
    state.mkdir()
    old = state / "env.sh"
    old.write_text("# written by an older rehearsal.sh\n")
    old.chmod(0o644)
    env = dict(os.environ, TRAINIUM_REHEARSAL_DIR=str(state), TRAINIUM_REHEARSAL_SERVICES="none")
    up = subprocess.run([str(ROOT / "tools" / "rehearsal" / "rehearsal.sh"), "up"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert up.returncode == 0, up.stdout + up.stderr
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert f'export TRAINIUM_REHEARSAL_DIR="{state}"' in old.read_text()
    assert sorted(p.name for p in state.iterdir() if p.name.startswith("env.sh")) == ["env.sh"]


@pytest.mark.parametrize("role, variable, default", [
    ("trn_launch_template", "trn_launch_template_metadata_hop_limit", 1),
    ("eks_cluster", "eks_cluster_logging", ALL_LOG_TYPES),
    ("eks_cluster", "eks_cluster_log_retention_days", 90),
    ("eks_cluster", "eks_cluster_secrets_encryption", True),
    ("eks_cluster", "eks_cluster_authentication_mode", "API"),
    ("eks_cluster", "eks_cluster_bootstrap_creator_admin", True),
    ("eks_cluster", "eks_cluster_admin_principal_arns", []),
    ("fsx_lustre", "fsx_lustre_automatic_backup_retention_days", 7),
    ("fsx_lustre", "fsx_lustre_final_backup", True),
    ("eks_cluster", "eks_cluster_network_policy", True),
    ("system_nodegroup", "system_nodegroup_metadata_hop_limit", 1),
])
def test_role_defaults_and_argument_specs_agree(role, variable, default):
    """The defaults docs/security.md states, in both places a role writes them."""
    import yaml  # pylint: disable=import-outside-toplevel

    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert defaults[variable] == default
    assert spec[variable]["default"] == default
