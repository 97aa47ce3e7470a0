# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Action plugin of trainium.eks.validate_variables: the validation pass, on the controller."""

from __future__ import annotations

import hashlib
import json
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
from ansible_collections.trainium.eks.plugins.module_utils.trainium_validation import (
    apply_defaults,
    role_problems,
    undeclared_problems,
    validation_problems,
)

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


# The raw input of a name that neither the run nor the role's defaults give.
UNSET = "<unset>"


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
    _VALID_ARGS = frozenset(("roles", "scope", "refuse_undeclared"))
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
        # The roles' own name checks (state absent) need not run again in this run.
        result["ansible_facts"] = {"trainium_deployment": dict(model, validation={"roles": {}})}
        return result

    def _role_file(self, role, *parts):
        return os.path.join(COLLECTION_ROOT, "roles", role, *parts)

    def _entry_points(self, role):
        """The role's argument specs, every entry point (read once per task)."""
        cache = self.__dict__.setdefault("_specs", {})
        if role not in cache:
            path = self._role_file(role, "meta", "argument_specs.yml")
            if not os.path.exists(path):
                raise AnsibleError(f"validate_variables: role {role!r} has no meta/argument_specs.yml in {COLLECTION_ROOT}")
            cache[role] = (self._loader.load_from_file(path) or {}).get("argument_specs") or {}
        return cache[role]

    def _spec_options(self, role):
        return (self._entry_points(role).get("main") or {}).get("options") or {}

    def _undeclared(self, task_vars):
        """Problems of the names with a prefix of this collection that no role or playbook declares."""
        roles = sorted(name for name in os.listdir(os.path.join(COLLECTION_ROOT, "roles"))
                       if os.path.isfile(self._role_file(name, "meta", "argument_specs.yml")))
        declared = set(DEPLOYMENT_VARIABLES)
        for role in roles:
            for entry in self._entry_points(role).values():
                declared.update((entry or {}).get("options") or {})
        # Its type is checked with the preflight role's variables; here only the names it lists count.
        ignored = self._resolve(["trainium_other_variables"], {}, task_vars).get("trainium_other_variables") or []
        if isinstance(ignored, str):
            ignored = [name.strip() for name in ignored.split(",")]
        if not isinstance(ignored, list):
            ignored = []
        return undeclared_problems(task_vars, declared, roles, [str(name) for name in ignored])

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

    @staticmethod
    def _inputs(names, defaults, task_vars):
        """A short digest of each name's raw (untemplated) input: what the run gives it, else the role default.

        At the validation pass the role defaults come from the file; at the
        role's entry Ansible has put them among the variables. Equal inputs
        give equal digests, so a role entered with other values (include_role
        vars, a play's vars) is checked again, and one entered as the pass saw
        it is not.
        """
        digests = {}
        for name in sorted(names):
            if name in DEPLOYMENT_VARIABLES:
                continue
            raw = task_vars[name] if name in task_vars else defaults.get(name, UNSET)
            text = json.dumps(plain(raw), sort_keys=True, default=repr)
            digests[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        return digests

    @staticmethod
    def _record(task_vars):
        """What this run's validation pass recorded in the contract (trainium_deployment.validation), or None."""
        contract = task_vars.get("trainium_deployment")
        record = contract.get("validation") if isinstance(contract, dict) else None
        return record if isinstance(record, dict) and isinstance(record.get("roles"), dict) else None

    def _checked_already(self, result, roles, scope, task_vars):
        """The result when this run's validation pass checked the request already, else None.

        The pass records in the contract each role's input digests and the
        names it could not resolve yet (a default that reads a later stage's
        facts); a role entered with the same inputs gets only those names
        checked, and no second model. One entered with other inputs is checked
        whole (None), and the variables that differ are named in the result.
        """
        record = self._record(task_vars)
        if record is None:
            return None
        if scope == "names":
            return dict(result, changed=False, msg="the names of the deployment were checked by the validation pass of this run")
        late = []
        for role in roles:
            entry = record["roles"].get(role)
            if not isinstance(entry, dict):
                return None
            seen = entry.get("inputs") or {}
            now = self._inputs(seen, {}, task_vars)
            differ = sorted(name for name in seen if now.get(name) != seen[name])
            if differ:
                self._differ = f"{role} entered with other values than the validation pass saw ({', '.join(differ)}): checked again"
                return None
            if entry.get("deferred"):
                late.append((role, entry["deferred"]))
        problems = []
        for role, names in late:
            options = {name: spec for name, spec in self._spec_options(role).items() if name in names}
            problems.extend(role_problems(role, options, self._resolve(options, {}, task_vars)))
        if problems:
            return dict(result, failed=True, msg=f"{len(problems)} problem(s) in the variables:\n" + "\n".join(problems))
        done = "; ".join(f"{role}: {', '.join(names)}" for role, names in late)
        return dict(result, changed=False, msg=(
            "checked by the validation pass of this run" + (f"; checked now, once the facts they read exist: {done}" if done else "")))

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
        refuse_undeclared = self._task.args.get("refuse_undeclared", False)
        if not isinstance(refuse_undeclared, bool):
            return dict(result, failed=True, msg=f"refuse_undeclared: got {refuse_undeclared!r}; allowed: true or false")

        existing = self._record(task_vars)
        # A role's entry after the validation pass of this run: nothing to check again.
        if not refuse_undeclared:
            done = self._checked_already(result, roles, scope, task_vars)
            if done is not None:
                return done

        # Before the model is added to the variables: a trainium_deployment given as input is refused.
        undeclared = self._undeclared(task_vars) if refuse_undeclared else []
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
        record = {}
        for role in roles:
            if not os.path.isdir(self._role_file(role)):
                checked.append((role, {}, {}))
                continue
            options = self._spec_options(role)
            defaults = self._defaults(role)
            values = self._resolve(options, defaults, task_vars)
            checked.append((role, options, values))
            resolvable = set(task_vars) | set(defaults)
            record[role] = {
                "inputs": self._inputs(options, defaults, task_vars),
                "deferred": sorted(name for name in options if name in resolvable and name not in values),
            }

        problems = undeclared + validation_problems(deployment, checked)
        if problems:
            result["failed"] = True
            result["msg"] = f"{len(problems)} problem(s) in the variables; nothing was created:\n" + "\n".join(problems)
            return result
        result["changed"] = False
        result["msg"] = f"the deployment variables and the variables of {', '.join(roles) or 'no role'} are valid"
        if getattr(self, "_differ", None):
            result["msg"] = f"{self._differ}; {result['msg']}"
        if existing is not None and not refuse_undeclared:
            # A role entered with other values: the contract of the pass stays as it is.
            return result
        if model is not None:
            # The contract records what was checked, so that the roles' entries need not check it again.
            model = dict(model, validation={"roles": record})
        result["ansible_facts"] = {"trainium_deployment": model}
        return result
