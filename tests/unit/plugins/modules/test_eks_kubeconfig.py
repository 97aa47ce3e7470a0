# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""eks_kubeconfig run in-process, as ansible-core 2.19 would run it, on a temporary directory.

Asserts on the files it leaves (content, modes), on what it reports (changed,
written, diff) and on the kubeconfig as kubectl would read it (YAML).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import urllib.parse

import pytest
import yaml

from ansible.module_utils.testing import patch_module_args
from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks_token
from ansible_collections.trainium.eks.plugins.modules import eks_kubeconfig

_SPEC = importlib.util.spec_from_file_location(
    "eks_authenticator", pathlib.Path(__file__).resolve().parents[4] / "tools" / "rehearsal" / "eks_authenticator.py")
authenticator = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(authenticator)

CLUSTER = "trn-rehearsal"
ARN = f"arn:aws:eks:us-west-2:123456789012:cluster/{CLUSTER}"
ENDPOINT = "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"
CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMrakNDQWVLZ0F3SUJBZ0lJZmFrZT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
PYTHON = "/opt/venv/bin/python3"
# An option left out of the task (so that its default applies).
UNSET = object()
HELPER = "#!/usr/bin/env python3\n\"\"\"EKS token helper (stand-in).\"\"\"\nprint('token')\n\n"


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def run(capsys, path, **extra):
    """main() with these options; (exit code, result)."""
    args = dict(path=str(path), cluster_name=CLUSTER, cluster_arn=ARN, endpoint=ENDPOINT, certificate_authority=CA, region="us-west-2",
                python=PYTHON, helper_source=HELPER)
    args.update(extra)
    args = {key: value for key, value in args.items() if value is not UNSET}
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
        "installHint": eks_kubeconfig.INSTALL_HINT.format(python=PYTHON),
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


# ------------------------------------------------ the exec plugin as kubectl runs it

REAL_HELPER = pathlib.Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / "trainium_eks_token.py"
ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET = "not-a-real-secret-key"
CANNED = {"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1beta1", "spec": {},
          "status": {"expirationTimestamp": "2026-12-01T00:14:00Z", "token": "k8s-aws-v1.aHR0cHM6Ly9zdHMv"}}


def interpreter(directory, *flags):
    """A `python3` in ``directory``/bin that runs this test's Python (``-S``: without site-packages, so without botocore)."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python3"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {' '.join(flags)} \"$@\"\n")
    python.chmod(0o755)
    return bin_dir


def fake_aws(directory):
    """An `aws` that records its arguments and STS endpoint and prints a canned ExecCredential."""
    directory.mkdir(parents=True, exist_ok=True)
    aws = directory / "aws"
    aws.write_text("#!/bin/sh\n"
                   f"printf '%s\\n' \"$@\" > {directory}/argv\n"
                   f"printf '%s' \"$AWS_ENDPOINT_URL_STS\" > {directory}/sts\n"
                   f"echo '{json.dumps(CANNED)}'\n")
    aws.chmod(0o755)
    return directory


def exec_plugin(kubeconfig, path_dirs):
    """Run the kubeconfig's exec plugin as kubectl does: its command looked up on PATH, its args, a clean environment."""
    exec_config = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["exec"]
    env = {"PATH": os.pathsep.join(str(d) for d in path_dirs), "HOME": str(kubeconfig.parent), "AWS_ACCESS_KEY_ID": ACCESS_KEY,
           "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
           "AWS_EC2_METADATA_DISABLED": "true", "KUBERNETES_EXEC_INFO": json.dumps({"apiVersion": exec_config["apiVersion"]})}
    command = shutil.which(exec_config["command"], path=env["PATH"])
    assert command, f"{exec_config['command']} is not on PATH {env['PATH']}"
    return subprocess.run([command, *exec_config["args"]], capture_output=True, text=True, env=env, check=False, timeout=60)


@pytest.fixture
def written(capsys, tmp_path):
    """The kubeconfig and the real helper as the role writes them (default python), with the rehearsal's STS endpoint."""
    path = tmp_path / "kube" / f"{CLUSTER}.yaml"
    args = dict(helper_source=REAL_HELPER.read_text(), endpoint_url="http://127.0.0.1:5000")
    rc, result = run(capsys, path, **args, python=UNSET)
    assert rc == 0, result
    return path


def test_the_default_command_is_python3_from_path_and_no_interpreter_path_is_written(written):
    text = written.read_text()
    assert yaml.safe_load(text)["users"][0]["user"]["exec"]["command"] == "python3"
    for interpreter_path in (sys.executable, sys.prefix, os.path.realpath(sys.executable), os.path.dirname(sys.executable)):
        assert interpreter_path not in text


def test_a_rebuilt_virtualenv_still_gets_a_token(written, tmp_path):
    """The Python on PATH is replaced (old one deleted, new one elsewhere): the same kubeconfig still signs tokens."""
    first = interpreter(tmp_path / "venv-1")
    done = exec_plugin(written, [first, "/usr/bin", "/bin"])
    assert done.returncode == 0, done.stderr
    shutil.rmtree(tmp_path / "venv-1")
    second = interpreter(tmp_path / "rebuilt" / "venv-2")
    done = exec_plugin(written, [second, "/usr/bin", "/bin"])
    assert done.returncode == 0, done.stderr
    credential = json.loads(done.stdout)
    url = urllib.parse.urlsplit(trainium_eks_token.url_from_token(credential["status"]["token"]))
    assert url.netloc == "127.0.0.1:5000"
    assert dict(urllib.parse.parse_qsl(url.query))["X-Amz-Credential"].startswith(ACCESS_KEY + "/")


def test_without_botocore_the_aws_cli_makes_the_token(written, tmp_path):
    no_botocore = interpreter(tmp_path / "plain", "-S")
    cli = fake_aws(tmp_path / "cli")
    done = exec_plugin(written, [no_botocore, cli, "/usr/bin", "/bin"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == CANNED
    assert (cli / "argv").read_text().split("\n")[:9] == [
        "eks", "get-token", "--cluster-name", CLUSTER, "--region", "us-west-2", "--output", "json", ""]
    assert (cli / "sts").read_text() == "http://127.0.0.1:5000"


def test_without_botocore_and_aws_cli_the_message_says_what_to_install(written, tmp_path):
    no_botocore = interpreter(tmp_path / "plain", "-S")
    done = exec_plugin(written, [no_botocore, "/nonexistent"])
    assert done.returncode == 1 and done.stdout == ""
    assert f"cannot make a token for cluster {CLUSTER}" in done.stderr
    assert "cannot import botocore and there is no AWS CLI (aws) on PATH" in done.stderr
    assert "pip install --user botocore" in done.stderr


@pytest.mark.skipif(not shutil.which("aws"), reason="no AWS CLI on this machine")
def test_the_real_aws_cli_token_is_one_the_authenticator_accepts(written, tmp_path):
    no_botocore = interpreter(tmp_path / "plain", "-S")
    done = exec_plugin(written, [no_botocore, os.path.dirname(shutil.which("aws")), "/usr/bin", "/bin"])
    assert done.returncode == 0, done.stderr
    token = json.loads(done.stdout)["status"]["token"]
    assert authenticator.review(token, SECRET, {"127.0.0.1:5000"}, [CLUSTER])[1:] == (ACCESS_KEY, CLUSTER)
