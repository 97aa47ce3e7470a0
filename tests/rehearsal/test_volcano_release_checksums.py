# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Volcano manifest checksums the collection ships, against the manifests themselves.

The volcano role checks the release manifest it applies against the sha256 of
``VOLCANO_MANIFEST_SHA256`` (plugins/module_utils/trainium_validation.py), so
that no run trusts a download on first use. Each entry is computed from the
release's ``installer/volcano-development.yaml`` as the Go module proxy serves
it: ``go mod download`` checks the module zip against the checksum database
(sum.golang.org), and the zip holds the release tag's files unchanged. This
test downloads every listed release again (the Go module cache keeps it) and
compares: a wrong or mistyped entry fails here, not on a user's first run.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

# The collection's import path in a checkout (as tests/unit/conftest.py sets it).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / ".collections"))
from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv  # noqa: E402  pylint: disable=wrong-import-position

GO = os.environ.get("GO") or shutil.which("go") or "/usr/local/go/bin/go"


@pytest.mark.parametrize("version", sorted(tv.VOLCANO_MANIFEST_SHA256))
def test_the_shipped_checksum_is_the_sha256_of_the_release_manifest(version, tmp_path):
    # Outside any module (tmp_path), with the machine's proxy and checksum database settings.
    done = subprocess.run([GO, "mod", "download", "-json", f"volcano.sh/volcano@{version}"], cwd=tmp_path,
                          env=dict(os.environ, GOFLAGS="-mod=mod"), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    module = json.loads(done.stdout)
    assert module["Version"] == version and module["Sum"].startswith("h1:"), module
    manifest = pathlib.Path(module["Dir"]) / "installer" / "volcano-development.yaml"
    assert hashlib.sha256(manifest.read_bytes()).hexdigest() == tv.VOLCANO_MANIFEST_SHA256[version]
    # The manifest of that release: its images carry the release's tag.
    assert f"volcanosh/vc-scheduler:{version}" in manifest.read_text(encoding="utf-8")
