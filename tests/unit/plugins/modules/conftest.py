# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Modules run in-process here as they run on a target: their warnings go into their result.

Once a test in the same process has loaded controller code (an action or
filter plugin), ansible-core takes the process for the controller and shows
module warnings on the console instead of returning them.
"""

from __future__ import annotations

import pytest

from ansible.module_utils import _internal
from ansible.module_utils.common import warnings


@pytest.fixture(autouse=True)
def module_side(monkeypatch):
    """Each test starts with no warnings of an earlier module run (a real module is a process of its own)."""
    monkeypatch.setattr(_internal, "is_controller", False)
    warnings._global_warnings.clear()
    warnings._global_deprecations.clear()
