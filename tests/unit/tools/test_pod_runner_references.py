# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the rehearsal's pod runner reads an image reference: by tag, by digest, by tag and digest (the digest wins)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[3] / "tools" / "rehearsal" / "pod_runner.py"


@pytest.fixture(scope="module")
def runner():
    spec = importlib.util.spec_from_file_location("rehearsal_pod_runner", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize("image,expected", [
    ("127.0.0.1:5000/trainium/bert:v1-0123", ("trainium/bert", "v1-0123")),
    (f"127.0.0.1:5000/trainium/bert@{DIGEST}", ("trainium/bert", DIGEST)),
    (f"127.0.0.1:5000/trainium/bert:v1-0123@{DIGEST}", ("trainium/bert", DIGEST)),
    ("localhost:5000/trainium/bert", ("trainium/bert", "latest")),
    (f"123456789012.dkr.ecr.us-west-2.amazonaws.com/bert:v1@{DIGEST}", ("bert", DIGEST)),
    ("public.ecr.aws/neuron/neuron-device-plugin:2.31.0.0", None),
])
def test_repository_and_reference(runner, image, expected):
    registry = runner.Registry("127.0.0.1:5000", None, "", None)
    assert registry.repository_of(image) == expected
