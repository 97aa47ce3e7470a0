# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/rehearsal/timing/buildah: the pipeline benchmark's buildah, which adds a
Neuron image's build time (AWS_SECONDS["image"] x the scale factor) before a
build and otherwise hands every call to the real buildah unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TIMING = ROOT / "tools" / "rehearsal" / "timing"
sys.path.insert(0, str(ROOT / "tools" / "rehearsal"))

import moto_ext_timing  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def fake_buildah(tmp_path):
    """A 'real' buildah after the stand-in on PATH, which records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "calls.jsonl"
    script = bin_dir / "buildah"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n", encoding="utf-8")
    script.chmod(0o755)
    scale = tmp_path / "aws-time-scale"
    env = dict(os.environ, PATH=f"{TIMING}{os.pathsep}{bin_dir}{os.pathsep}{os.environ['PATH']}",
               TRAINIUM_REHEARSAL_AWS_TIME_SCALE_FILE=str(scale))

    def run(*args):
        started = time.monotonic()
        done = subprocess.run(["buildah", *args], env=env, capture_output=True, text=True, check=False, timeout=60)
        calls = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()] if record.exists() else []
        record.unlink(missing_ok=True)
        return done, calls, time.monotonic() - started

    return run, scale


def test_the_image_build_is_one_of_the_emulated_aws_times():
    assert moto_ext_timing.AWS_SECONDS["image"] == 600


def test_without_a_factor_every_call_goes_to_the_real_buildah_unchanged(fake_buildah):
    run, dummy = fake_buildah
    args = ["--root", "/srv/b", "--storage-driver", "vfs", "build", "--isolation", "chroot", "-f", "Containerfile", "-t", "r/i:t", "ctx"]
    done, calls, dummy = run(*args)
    assert done.returncode == 0, done.stderr
    assert calls == [args]
    assert "emulating" not in done.stderr


def test_with_a_factor_a_build_waits_the_scaled_image_time_first(fake_buildah):
    run, scale = fake_buildah
    scale.write_text("0.002\n", encoding="utf-8")  # 600 s x 0.002 = 1.2 s
    done, calls, seconds = run("--root", "/srv/b", "build", "-t", "r/i:t", "ctx")
    assert done.returncode == 0, done.stderr
    assert calls == [["--root", "/srv/b", "build", "-t", "r/i:t", "ctx"]]
    assert "emulating a Neuron image build on AWS: 1.2 s" in done.stderr
    assert seconds >= 1.15


def test_with_a_factor_a_push_is_not_delayed(fake_buildah):
    run, scale = fake_buildah
    scale.write_text("0.5\n", encoding="utf-8")  # a build would wait 300 s: the test's timeout is 60
    done, calls, dummy = run("push", "--digestfile", "/tmp/d", "r/i:t", "docker://r/i:t")
    assert done.returncode == 0, done.stderr
    assert calls == [["push", "--digestfile", "/tmp/d", "r/i:t", "docker://r/i:t"]]
    assert "emulating" not in done.stderr


def test_without_a_real_buildah_after_it_the_stand_in_says_so(tmp_path):
    # The stand-in's shell and interpreter, and nothing else on PATH.
    (tmp_path / "python3").symlink_to(sys.executable)
    (tmp_path / "bash").symlink_to(shutil.which("bash"))
    env = dict(os.environ, PATH=f"{TIMING}{os.pathsep}{tmp_path}")
    done = subprocess.run([str(TIMING / "buildah"), "version"], env=env, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 127
    assert "no buildah on PATH after" in done.stderr
