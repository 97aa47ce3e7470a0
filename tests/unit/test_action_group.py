# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Every AWS module of the collection is in the action group the roles give region and endpoint to.

The roles set ``module_defaults: {group/trainium.eks.aws: {region, endpoint_url}}``;
a module left out of the group runs with the environment's region, or none
(the rehearsal's environment has one, so only this test sees the omission).
"""

from __future__ import annotations

import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_module_built_on_ansible_aws_module_is_in_the_aws_action_group():
    group = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["action_groups"]["aws"]
    members = {entry for entry in group if isinstance(entry, str)}
    aws_modules = {path.stem for path in (ROOT / "plugins" / "modules").glob("*.py") if "AnsibleAWSModule(" in path.read_text()}
    assert "account_resources_info" in aws_modules
    assert sorted(aws_modules - members) == []
    assert sorted(members - aws_modules) == []
