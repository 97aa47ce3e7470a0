# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""eks_kubeconfig run in-process, as ansible-core 2.19 would run it, on a temporary directory.

Asserts on the files it leaves (content, modes), on what it reports (changed,
written, diff) and on the kubeconfig as kubectl would read it (YAML).
"""

from __future__ import annotations

import json
import os
import stat

import pytest
import yaml

from ansible.module_utils.testing import patch_module_args
from ansible_collections.trainium.eks.plugins.modules import eks_kubeconfig

CLUSTER = "trn-rehearsal"
ARN = f"arn:aws:eks:us-west-2:123456789012:cluster/{CLUSTER}"
ENDPOINT = "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"
CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMrakNDQWVLZ0F3SUJBZ0lJZmFrZT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
PYTHON = "/opt/venv/bin/python3"
HELPER = "#!/usr/bin/env python3\n\"\"\"EKS token helper (stand-in).\"\"\"\nprint('token')\n\n"


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def run(capsys, path, **extra):
    """main() with these options; (exit code, result)."""
    args = dict(path=str(path), cluster_name=CLUSTER, cluster_arn=ARN, endpoint=ENDPOINT, certificate_authority=CA, region="us-west-2",
                python=PYTHON, helper_source=HELPER)
    args.update(extra)
    capsys.readouterr()
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exited:
            eks_kubeconfig.main()
    return exited.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def kube_dir(tmp_path):
    """A directory that does not exist yet, in a temporary one."""
    return tmp_path / "kube"


def test_present_writes_the_directory_helper_and_kubeconfig_with_their_modes(capsys, kube_dir):
    path = kube_dir / f"{CLUSTER}.yaml"
    helper = kube_dir / f"{CLUSTER}-eks-token.py"
    rc, result = run(capsys, path)
    assert rc == 0, result
    assert result["changed"] is True
    assert result["path"] == str(path) and result["helper_path"] == str(helper)
    assert result["written"] == [str(kube_dir), str(helper), str(path)]
    assert (mode(kube_dir), mode(helper), mode(path)) == (0o700, 0o644, 0o600)
    assert helper.read_text() == HELPER.rstrip("\n") + "\n"
    assert sorted(os.listdir(kube_dir)) == [f"{CLUSTER}-eks-token.py", f"{CLUSTER}.yaml"]


def test_the_kubeconfig_is_yaml_that_runs_the_helper(capsys, kube_dir):
    path = kube_dir / "config"
    assert run(capsys, path)[0] == 0
    text = path.read_text()
    assert text.startswith(f"# EKS cluster {CLUSTER}, written by trainium.eks.")
    config = yaml.safe_load(text)
    assert config["apiVersion"] == "v1" and config["kind"] == "Config"
    assert config["clusters"] == [{"name": ARN, "cluster": {"server": ENDPOINT, "certificate-authority-data": CA}}]
    assert config["contexts"] == [{"name": CLUSTER, "context": {"cluster": ARN, "user": ARN}}]
    assert config["current-context"] == CLUSTER
    (user,) = config["users"]
    assert user["name"] == ARN
    assert list(user["user"]) == ["exec"]
    assert user["user"]["exec"] == {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": PYTHON,
        "args": [str(kube_dir / f"{CLUSTER}-eks-token.py"), "--cluster-name", CLUSTER, "--region", "us-west-2"],
        "interactiveMode": "Never",
        "provideClusterInfo": False,
    }


def test_endpoint_url_and_profile_are_passed_to_the_helper(capsys, kube_dir):
    path = kube_dir / "config"
    assert run(capsys, path, endpoint_url="http://127.0.0.1:5000", aws_profile="trn: prod")[0] == 0
    args = yaml.safe_load(path.read_text())["users"][0]["user"]["exec"]["args"]
    assert args[1:] == ["--cluster-name", CLUSTER, "--region", "us-west-2", "--endpoint-url", "http://127.0.0.1:5000", "--profile", "trn: prod"]


def test_second_run_changes_nothing(capsys, kube_dir):
    path = kube_dir / "config"
    assert run(capsys, path)[1]["changed"] is True
    before = os.stat(path).st_mtime_ns, os.stat(kube_dir / f"{CLUSTER}-eks-token.py").st_mtime_ns
    rc, result = run(capsys, path)
    assert rc == 0, result
    assert (result["changed"], result["written"]) == (False, [])
    assert (os.stat(path).st_mtime_ns, os.stat(kube_dir / f"{CLUSTER}-eks-token.py").st_mtime_ns) == before


def test_only_what_differs_is_rewritten(capsys, kube_dir):
    path = kube_dir / "config"
    helper = kube_dir / f"{CLUSTER}-eks-token.py"
    run(capsys, path)
    os.chmod(path, 0o644)
    rc, result = run(capsys, path)
    assert rc == 0 and result["written"] == [str(path)]
    assert mode(path) == 0o600
    rc, result = run(capsys, path, helper_source=HELPER + "# v2\n")
    assert rc == 0 and result["written"] == [str(helper)]
    assert helper.read_text().endswith("# v2\n")
    rc, result = run(capsys, path, endpoint="https://other.example.com", helper_source=HELPER + "# v2\n")
    assert rc == 0 and result["written"] == [str(path)]
    assert yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"] == "https://other.example.com"


def test_each_cluster_has_its_own_helper(capsys, kube_dir):
    first, second = kube_dir / "a.yaml", kube_dir / "b.yaml"
    assert run(capsys, first)[0] == 0
    rc, result = run(capsys, second, cluster_name="trn-other", cluster_arn=ARN.replace(CLUSTER, "trn-other"))
    assert rc == 0, result
    assert result["helper_path"] == str(kube_dir / "trn-other-eks-token.py")
    assert yaml.safe_load(second.read_text())["users"][0]["user"]["exec"]["args"][0] == str(kube_dir / "trn-other-eks-token.py")
    rc, result = run(capsys, second, cluster_name="trn-other", state="absent")
    assert rc == 0 and result["changed"] is True
    # The other cluster's kubeconfig and helper are untouched.
    assert sorted(os.listdir(kube_dir)) == ["a.yaml", f"{CLUSTER}-eks-token.py"]


def test_check_mode_reports_the_change_and_writes_nothing(capsys, kube_dir):
    path = kube_dir / "config"
    rc, result = run(capsys, path, _ansible_check_mode=True, _ansible_diff=True)
    assert rc == 0, result
    assert result["changed"] is True
    assert result["written"] == [str(kube_dir), str(kube_dir / f"{CLUSTER}-eks-token.py"), str(path)]
    assert not kube_dir.exists()
    assert result["diff"]["before"] == ""
    assert yaml.safe_load(result["diff"]["after"])["current-context"] == CLUSTER


def test_check_mode_on_a_changed_endpoint_shows_the_diff_and_keeps_the_file(capsys, kube_dir):
    path = kube_dir / "config"
    run(capsys, path)
    text = path.read_text()
    rc, result = run(capsys, path, endpoint="https://other.example.com", _ansible_check_mode=True, _ansible_diff=True)
    assert rc == 0, result
    assert (result["changed"], result["written"]) == (True, [str(path)])
    assert path.read_text() == text
    assert result["diff"]["before"] == text
    assert '"https://other.example.com"' in result["diff"]["after"] and result["diff"]["after_header"] == str(path)


def test_absent_removes_both_files_and_then_has_nothing_to_do(capsys, kube_dir):
    path = kube_dir / "config"
    helper = kube_dir / f"{CLUSTER}-eks-token.py"
    run(capsys, path)
    rc, result = run(capsys, path, state="absent", _ansible_check_mode=True)
    assert rc == 0 and (result["changed"], result["written"]) == (True, [str(path), str(helper)])
    assert path.exists() and helper.exists()
    rc, result = run(capsys, path, state="absent")
    assert rc == 0 and (result["changed"], result["written"]) == (True, [str(path), str(helper)])
    assert not path.exists() and not helper.exists()
    assert kube_dir.is_dir()
    rc, result = run(capsys, path, state="absent")
    assert rc == 0 and (result["changed"], result["written"]) == (False, [])


def test_absent_needs_only_the_path_and_cluster_name(capsys, kube_dir):
    rc, result = run(capsys, kube_dir / "config", state="absent", cluster_arn=None, endpoint=None, certificate_authority=None, region=None,
                     python=None, helper_source=None)
    assert rc == 0, result
    assert result["changed"] is False


def test_absent_diff_in_check_mode_shows_the_kubeconfig_going(capsys, kube_dir):
    path = kube_dir / "config"
    run(capsys, path)
    rc, result = run(capsys, path, state="absent", _ansible_check_mode=True, _ansible_diff=True)
    assert rc == 0 and result["diff"]["before"] == path.read_text() and result["diff"]["after"] == ""


def test_absent_diff_shows_the_kubeconfig_that_was_removed(capsys, kube_dir):
    path = kube_dir / "config"
    run(capsys, path)
    text = path.read_text()
    rc, result = run(capsys, path, state="absent", _ansible_diff=True)
    assert rc == 0 and not path.exists()
    assert result["diff"]["before"] == text


def test_present_without_the_cluster_facts_fails_naming_them(capsys, kube_dir):
    rc, result = run(capsys, kube_dir / "config", endpoint="", certificate_authority=None)
    assert rc == 1
    assert result["msg"].startswith("endpoint, certificate_authority: required with state=present")
    assert not kube_dir.exists()


def test_tilde_is_expanded(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    rc, result = run(capsys, "~/.kube/trn.yaml")
    assert rc == 0, result
    assert result["path"] == str(tmp_path / ".kube" / "trn.yaml")
    assert (tmp_path / ".kube" / f"{CLUSTER}-eks-token.py").is_file()


def test_a_kubeconfig_it_did_not_write_is_refused_and_left_alone(capsys, kube_dir):
    kube_dir.mkdir(mode=0o700)
    path = kube_dir / "config"
    path.write_text("apiVersion: v1\nkind: Config\ncontexts: [{name: prod}]\n")
    rc, result = run(capsys, path)
    assert rc == 1 and result["msg"].startswith(f"path: got {path}, a kubeconfig trainium.eks did not write")
    assert path.read_text().startswith("apiVersion: v1") and not (kube_dir / f"{CLUSTER}-eks-token.py").exists()
    rc, result = run(capsys, path, state="absent")
    assert rc == 0 and path.exists()


def test_a_directory_others_may_write_to_is_refused(capsys, kube_dir):
    kube_dir.mkdir()
    os.chmod(kube_dir, 0o777)
    rc, result = run(capsys, kube_dir / f"{CLUSTER}.yaml")
    assert rc == 1 and "in a directory others may write to" in result["msg"]
    assert list(kube_dir.iterdir()) == []


def test_the_kubeconfig_of_version_0_3_0_is_rewritten(capsys, kube_dir):
    kube_dir.mkdir(mode=0o700)
    path = kube_dir / f"{CLUSTER}.yaml"
    path.write_text("# Ansible managed\n# EKS cluster trn-rehearsal. No token is stored here: kubectl and\n# ...\napiVersion: v1\n")
    rc, result = run(capsys, path)
    assert rc == 0 and result["changed"] is True
    assert path.read_text().startswith(f"# EKS cluster {CLUSTER}, written by trainium.eks.")
