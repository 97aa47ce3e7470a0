# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""trainium_job.workload, a script of the user's own: what the validation pass refuses, and the progress lines."""

from __future__ import annotations

from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td
from ansible_collections.trainium.eks.plugins.module_utils import trainium_neuron_job as nj
from ansible_collections.trainium.eks.plugins.module_utils.trainium_problems import Problems

DIGEST = "sha256:" + "ab" * 32


def problems(workload):
    errors = Problems()
    td._validate_workload(errors, workload)  # pylint: disable=protected-access
    return list(errors)


def test_a_context_with_the_script_passes_and_every_misfit_is_one_line(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    assert problems({"context": str(tmp_path), "script": "train.py", "args": []}) == []
    assert problems({"context": str(tmp_path), "script": "missing.py"}) == [
        f"trainium_job.workload.script: got 'missing.py' (str); allowed: the path of a file inside {tmp_path} (relative to it)"]
    assert len(problems({"context": str(tmp_path), "script": "../train.py"})) == 1
    assert problems({"context": str(tmp_path), "script": 'train.py" \nRUN curl x'}) == [
        "trainium_job.workload.script: got 'train.py\" \\nRUN curl x' (str); allowed: a path of letters, digits, '.', '_', '-' "
        "and '/' (it goes into the image's label and the pods' command line)"]
    assert len(problems({"context": str(tmp_path), "script": str(tmp_path / "train.py")})) == 1
    assert problems({"context": str(tmp_path / "nowhere"), "script": "train.py"})[0].startswith(
        f"trainium_job.workload.context: got '{tmp_path / 'nowhere'}' (str); allowed: a directory on the controller")
    (tmp_path / "sub" / "credentials").symlink_to(tmp_path.parent)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[remote]\n", encoding="utf-8")
    assert problems({"context": str(tmp_path), "script": "train.py"}) == [
        f"trainium_job.workload.context: got '{tmp_path}' (str); allowed: a directory without symbolic links or hidden files "
        "(every file of it goes into the image: a link would take a file from elsewhere, and .git, .aws or .env hold "
        "credentials); found: symbolic links sub/credentials; hidden files or directories .git"]
    (tmp_path / "sub" / "credentials").unlink()
    (tmp_path / ".git" / "config").unlink()
    (tmp_path / ".git").rmdir()
    assert "not / or your home directory" in problems({"context": "~", "script": "train.py"})[0]
    assert "not / or your home directory" in problems({"context": "/", "script": "train.py"})[0]
    (tmp_path / "Containerfile").write_text("FROM scratch\n", encoding="utf-8")
    assert "allowed: a directory without a Containerfile or Dockerfile" in problems({"context": str(tmp_path), "script": "train.py"})[0]


def test_one_source_a_digest_and_a_pattern_that_compiles():
    assert problems({"script": "/app/train.py"}) == [
        "trainium_job.workload: got [] (list); allowed: exactly one of context (a directory to build from) and image "
        "(an image pinned by digest)"]
    assert len(problems({"script": "/app/train.py", "context": "/tmp", "image": "reg.example.com/team/train@" + DIGEST})) == 1
    assert problems({"script": "/app/train.py", "image": "reg.example.com/team/train@" + DIGEST}) == []
    assert problems({"script": "/app/train.py", "image": "reg.example.com/team/train:1.0"}) == [
        "trainium_job.workload.image: got 'reg.example.com/team/train:1.0' (str); allowed: an image pinned by digest, "
        "registry/name@sha256:<64 hex digits>"]
    assert problems({"script": "train.py", "image": "reg.example.com/team/train@" + DIGEST}) == [
        "trainium_job.workload.script: got 'train.py' (str); allowed: the script's absolute path in trainium_job.workload.image"]
    found = problems({"script": "/app/train.py", "image": "reg.example.com/team/train@" + DIGEST, "progress_regex": "step ("})
    assert len(found) == 1 and found[0].startswith("trainium_job.workload.progress_regex: got 'step (' (str); allowed: a Python regular")


def test_a_dollar_in_the_arguments_reaches_the_script_as_given():
    params = {"name": "own", "nnodes": 2, "nproc_per_node": 2, "script": "/opt/trainium-eks/train.py",
              "script_args": ["--tag", "$(HOME)", "--cost", "5$$"]}
    line = nj.launcher_line(params, "own-1234")
    assert line.endswith(" --tag '$$(HOME)' --cost '5$$$$'"), line
    assert "'own-1234'-\"${TRAINIUM_JOB_GROUP:-0}\"" in line


def test_the_progress_line_is_the_last_line_the_pattern_finds():
    text = "LOG start\nown step 1 loss 3.0\nnoise\n[default0]:own step 2 loss 2.5\nLOG tail\n"
    assert nj.last_log_line(text) == "LOG tail"
    assert nj.last_log_line(text, pattern=r"own step ") == "own step 2 loss 2.5"  # torchrun's --tee prefix goes
    assert nj.last_log_line(text, pattern=r"^own step ") == "own step 1 loss 3.0"
    assert nj.last_log_line("nothing here\n", pattern=r"^own step ") is None
    assert nj.last_log_line("own step 3 \x1b[2Jloss 1.0\n", pattern=r"^own step ") == "own step 3 [2Jloss 1.0"
    assert len(nj.last_log_line("own step 4 " + "x" * 100000 + "\n", pattern=r"^own step ")) == nj.PROGRESS_LINE_MAX
    assert nj.problems({"name": "own", "cacheset": "c", "instance_type": "trn1.32xlarge", "state": "present", "progress_regex": "("}) == [
        "progress_regex: got '('; allowed: a Python regular expression (missing ), unterminated subpattern at position 0)"]
