# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of trainium.eks.validate_variables: the validation pass, on the controller."""

from __future__ import annotations

import os
import re

from ansible.errors import AnsibleError, AnsibleUndefinedVariable
from ansible.release import __version__ as ANSIBLE_VERSION
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import (
    DEPLOYMENT_VARIABLES,
    deployment_errors,
    deployment_model,
)
from ansible_collections.trainium.eks.plugins.module_utils.trainium_problems import plain
from ansible_collections.trainium.eks.plugins.module_utils.trainium_validation import apply_defaults, validation_problems

MINIMUM_ANSIBLE = "2.19.0"


def _ansible_is_recent_enough(version=None):
    """Whether ansible-core ``version`` (the running one by default) is MINIMUM_ANSIBLE or newer."""
    numbers = []
    for part in (version or ANSIBLE_VERSION).split(".")[:3]:
        digits = "".join(char for char in part if char.isdigit()) or "0"
        numbers.append(int(digits))
    return tuple(numbers) >= tuple(int(part) for part in MINIMUM_ANSIBLE.split("."))


COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The role whose argument spec describes the deployment variables (and their defaults).
DEPLOYMENT_SPEC_ROLE = "preflight"
# scope=names: the variables a teardown needs, the names and tags it looks resources up by.
NAME_PROBLEM_RE = re.compile(
    r"^(trainium_cluster_name|trainium_region|trainium_aws_endpoint_url|trainium_tags\S*|trainium_node_pools"
    r"|trainium_node_pools\[\d+\](\.name)?|trainium_storage|trainium_image(\.repository)?|trainium_teardown_keep\S*): "
)


def _trusted(value):
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return value


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("roles", "scope"))
    _requires_connection = False

    def _names_only(self, result, deployment):
        """Check only what finding the resources by name needs; a teardown must not fail on anything else."""
        problems = [problem for problem in deployment_errors(deployment) if NAME_PROBLEM_RE.match(problem)]
        model = None
        if not problems:
            try:
                model = deployment_model(deployment)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                problems = [f"trainium_node_pools: the resource names cannot be made from these variables ({e})"]
        if problems:
            result["failed"] = True
            result["msg"] = f"{len(problems)} problem(s) in the names of the deployment; nothing was touched:\n" + "\n".join(problems)
            return result
        result["changed"] = False
        result["msg"] = "the names of the deployment are valid"
        result["ansible_facts"] = {"trainium_deployment": model}
        return result

    def _role_file(self, role, *parts):
        return os.path.join(COLLECTION_ROOT, "roles", role, *parts)

    def _spec_options(self, role):
        path = self._role_file(role, "meta", "argument_specs.yml")
        if not os.path.exists(path):
            raise AnsibleError(f"validate_variables: role {role!r} has no meta/argument_specs.yml in {COLLECTION_ROOT}")
        data = self._loader.load_from_file(path) or {}
        return ((data.get("argument_specs") or {}).get("main") or {}).get("options") or {}

    def _defaults(self, role):
        """The role's defaults file, trusted as templates as Ansible trusts it when the role runs."""
        path = self._role_file(role, "defaults", "main.yml")
        return _trusted(self._loader.load_from_file(path) or {}) if os.path.exists(path) else {}

    def _resolve(self, names, defaults, task_vars):
        """The value of each name: inventory / extra vars first, else the role default, templated.

        A value whose template reads something not defined yet (typically a
        later stage's facts) is left out: the role checks it when it runs.
        """
        available = dict(defaults)
        available.update(task_vars)
        templar = self._templar.copy_with_new_env(available_variables=available)
        values = {}
        for name in names:
            if name in task_vars:
                raw = task_vars[name]
            elif name in defaults:
                raw = defaults[name]
            else:
                continue
            try:
                values[name] = plain(templar.template(raw))
            except AnsibleUndefinedVariable:
                continue
        return values

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        roles = self._task.args.get("roles") or []
        if not isinstance(roles, list) or not all(isinstance(role, str) for role in roles):
            return dict(result, failed=True, msg=f"roles: got {roles!r}; allowed: a list of role names of trainium.eks")
        if not _ansible_is_recent_enough():
            return dict(result, failed=True, msg=f"ansible-core {ANSIBLE_VERSION} is too old; trainium.eks needs {MINIMUM_ANSIBLE} or newer")
        scope = self._task.args.get("scope") or "all"
        if scope not in ("all", "names") or (scope == "names" and roles):
            return dict(result, failed=True, msg=f"scope: got {scope!r}; allowed: all, or names (with no roles)")

        deployment_spec = self._spec_options(DEPLOYMENT_SPEC_ROLE)
        deployment = self._resolve(DEPLOYMENT_VARIABLES, {}, task_vars)
        for name in DEPLOYMENT_VARIABLES:
            spec = deployment_spec.get(name, {})
            if name not in deployment and "default" in spec:
                deployment[name] = spec["default"]
            if name in deployment:
                deployment[name] = apply_defaults(spec.get("options"), deployment[name])

        if scope == "names":
            return self._names_only(result, deployment)

        # Role defaults may read the normalized deployment (names, storage, ...).
        model = deployment_model(deployment) if not deployment_errors(deployment) else None
        if model is not None:
            task_vars = dict(task_vars, trainium_deployment=model)

        checked = []
        for role in roles:
            if not os.path.isdir(self._role_file(role)):
                checked.append((role, {}, {}))
                continue
            options = self._spec_options(role)
            checked.append((role, options, self._resolve(options, self._defaults(role), task_vars)))

        problems = validation_problems(deployment, checked)
        if problems:
            result["failed"] = True
            result["msg"] = f"{len(problems)} problem(s) in the variables; nothing was created:\n" + "\n".join(problems)
            return result
        result["changed"] = False
        result["msg"] = f"the deployment variables and the variables of {', '.join(roles) or 'no role'} are valid"
        result["ansible_facts"] = {"trainium_deployment": model}
        return result
