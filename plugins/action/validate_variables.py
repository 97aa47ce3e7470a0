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
from ansible_collections.trainium.eks.plugins.module_utils.trainium_limits import NODEGROUP_NAME_RULE
from ansible_collections.trainium.eks.plugins.module_utils.trainium_problems import Problems, plain
from ansible_collections.trainium.eks.plugins.module_utils.trainium_validation import (
    apply_defaults,
    check_option,
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


# Rules on a name that only creating needs: a teardown looks up by the same name whatever its length (a node group
# name over 63 characters was never created, but its launch template and placement group may have been).
CREATE_ONLY_RULES = (NODEGROUP_NAME_RULE,)

# The digest of a name whose value the validation pass could not resolve (a default that reads a later stage's facts).
UNRESOLVED = "unresolved"


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
        problems = [problem for problem in deployment_errors(deployment)
                    if NAME_PROBLEM_RE.match(problem) and not any(rule in problem for rule in CREATE_ONLY_RULES)]
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
        result["ansible_facts"] = {"trainium_deployment": dict(model, validation={
            "run": os.getppid(), "deployment": self._digest(deployment), "roles": {}})}
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
        # Converted as its spec says; a wrong type is reported with the preflight role's variables.
        name = "trainium_other_variables"
        ignored = check_option(Problems(), name, self._spec_options(DEPLOYMENT_SPEC_ROLE)[name],
                               self._resolve([name], {}, task_vars).get(name))
        return undeclared_problems(task_vars, declared, roles, [str(item) for item in ignored] if isinstance(ignored, list) else [])

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
    def _digest(value):
        """A short digest of a resolved value (plain types; mixed key types and other objects by their repr)."""
        value = plain(value)
        try:
            text = json.dumps(value, sort_keys=True, default=repr)
        except TypeError:
            text = repr(value)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def _digests(self, names, values):
        """Each name's digest of its resolved value; a name that could not be resolved has its own mark."""
        return {name: self._digest(values[name]) if name in values else UNRESOLVED for name in sorted(names)}

    def _deployment(self, task_vars):
        """The deployment variables as the run gives them, with the preflight spec's defaults filled in."""
        deployment_spec = self._spec_options(DEPLOYMENT_SPEC_ROLE)
        deployment = self._resolve(DEPLOYMENT_VARIABLES, {}, task_vars)
        for name in DEPLOYMENT_VARIABLES:
            spec = deployment_spec.get(name, {})
            if name not in deployment and "default" in spec:
                deployment[name] = spec["default"]
            if name in deployment:
                deployment[name] = apply_defaults(spec.get("options"), deployment[name])
        return deployment

    @staticmethod
    def _record(task_vars):
        """This run's record of the validation pass (trainium_deployment.validation), or None.

        Only the fact the action set counts, in this very run (the
        ansible-playbook process, the workers' parent): a trainium_deployment
        from the inventory, play or extra vars, or one a fact cache kept from
        an earlier run, is no record.
        """
        fact = (task_vars.get("ansible_facts") or {}).get("trainium_deployment")
        if not isinstance(fact, dict) or task_vars.get("trainium_deployment") != fact:
            return None
        record = fact.get("validation")
        if not isinstance(record, dict) or not isinstance(record.get("roles"), dict) or record.get("run") != os.getppid():
            return None
        return record

    def _checked_already(self, roles, task_vars, record, deployment):
        """None when this run's validation pass checked the request already; else why not (possibly empty).

        The pass records each role's variables as digests of their resolved
        values (and the deployment variables'); a role entered with values
        that resolve the same is not checked again. One entered with other
        values (include_role or play vars, or a default that reads a fact the
        pass did not have) is checked whole; the reason names what differs.
        """
        if self._digest(deployment) != record.get("deployment"):
            return "the deployment variables differ from what the validation pass saw: checked again"
        for role in roles:
            entry = record["roles"].get(role)
            if not isinstance(entry, dict) or not isinstance(entry.get("values"), dict):
                return ""  # not in the record (a role the pass was not given): checked, nothing to say
            seen = entry["values"]
            now = self._digests(seen, self._resolve(seen, {}, task_vars))
            differ = sorted(name for name in seen if now[name] != seen[name])
            if differ:
                return f"{role} entered with other values than the validation pass saw ({', '.join(differ)}): checked again"
        return None

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
        differ = None
        if existing is not None and not refuse_undeclared and scope == "names":
            return dict(result, changed=False, msg="the names of the deployment were checked by the validation pass of this run")

        # Before the model is added to the variables: a trainium_deployment given as input is refused. A second
        # pass in the same run (a playbook importing two stage playbooks) finds the run's facts and registered
        # variables among its variables: the inventory and extra vars were checked by the first.
        undeclared = self._undeclared(task_vars) if refuse_undeclared and existing is None else []
        deployment = self._deployment(task_vars)
        if existing is not None and not refuse_undeclared:
            differ = self._checked_already(roles, task_vars, existing, deployment)
            if differ is None:
                return dict(result, changed=False, msg="checked by the validation pass of this run")

        if scope == "names":
            return self._names_only(result, deployment)

        # Role defaults may read the normalized deployment (names, storage, ...).
        model = deployment_model(deployment) if not deployment_errors(deployment) else None
        if model is not None:
            task_vars = dict(task_vars, trainium_deployment=model)

        checked = []
        record = {}
        for role in roles:
            if not os.path.isfile(self._role_file(role, "meta", "argument_specs.yml")):
                checked.append((role, None, {}))
                continue
            options = self._spec_options(role)
            defaults = self._defaults(role)
            values = self._resolve(options, defaults, task_vars)
            checked.append((role, options, values))
            record[role] = {"values": self._digests((name for name in options if name not in DEPLOYMENT_VARIABLES), values)}

        problems = undeclared + validation_problems(deployment, checked)
        if problems:
            result["failed"] = True
            result["msg"] = (f"{differ}; " if differ else "") + (
                f"{len(problems)} problem(s) in the variables; nothing was created:\n" + "\n".join(problems))
            return result
        result["changed"] = False
        result["msg"] = (f"{differ}; " if differ else "") + (
            f"the deployment variables and the variables of {', '.join(roles) or 'no role'} are valid")
        if existing is not None and not refuse_undeclared:
            # A role checked again: its values join the run's record, unless the deployment variables changed (the
            # other roles' records hold for the deployment the pass saw, and stay bound to it).
            if model is not None:
                same = self._digest(deployment) == existing.get("deployment")
                validation = dict(existing, roles=dict(existing["roles"], **record)) if same else existing
                result["ansible_facts"] = {"trainium_deployment": dict(model, validation=validation)}
            return result
        if model is not None:
            # The contract records what was checked, in this run, so that the roles' entries need not check it again.
            model = dict(model, validation={"run": os.getppid(), "deployment": self._digest(deployment),
                                            "roles": dict((existing or {}).get("roles") or {}, **record)})
        result["ansible_facts"] = {"trainium_deployment": model}
        return result
