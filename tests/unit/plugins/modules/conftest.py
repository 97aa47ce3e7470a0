# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Modules run in-process here as they run on a target: their warnings go into their result.

Once a test in the same process has loaded controller code (an action or
filter plugin), ansible-core takes the process for the controller and shows
module warnings on the console instead of returning them.
"""

from __future__ import annotations

import json

import pytest

from ansible.module_utils import _internal
from ansible.module_utils.common import warnings
from ansible.module_utils.testing import patch_module_args


@pytest.fixture(autouse=True)
def module_side(monkeypatch):
    """Each test starts with no warnings of an earlier module run (a real module is a process of its own)."""
    monkeypatch.setattr(_internal, "is_controller", False)
    warnings._global_warnings.clear()
    warnings._global_deprecations.clear()


# What a module must not pick up from the developer's shell in a unit test.
AWS_ENVIRONMENT = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                   "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL", "AWS_URL", "EC2_URL", "AWS_CONFIG_FILE",
                   "AWS_SHARED_CREDENTIALS_FILE")


@pytest.fixture
def run_main(capsys, monkeypatch):
    """``run_main(main, args, check=False, diff=False)``: (exit code, result) of a module's ``main()`` run in-process
    with ``args``, in check and/or diff mode, without the AWS variables of the environment."""
    for name in AWS_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)

    def run(main, args, check=False, diff=False):
        capsys.readouterr()
        args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exited:
                main()
        return exited.value.code, json.loads(capsys.readouterr().out)

    return run
