# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input rules of EKS node groups that moto does not check (see moto_ext.py).

moto 5.2.5 creates a node group with any name, label or taint. EKS refuses,
with InvalidParameterException (HTTP 400), what the Amazon EKS API Reference
documents as out of bounds for CreateNodegroup and UpdateNodegroupConfig:

- ``nodegroupName``: letters, digits, '-' and '_', starting with a letter or
  digit, at most 63 characters (Amazon EKS User Guide, "Create a managed node
  group"; EKS answers "nodeGroupName can't be longer than 63 characters!");
- ``labels``: keys and values of 1-63 characters (UpdateNodegroupConfig's
  ``addOrUpdateLabels`` too);
- ``taints``: keys of 1-63 characters, values of at most 63, effect one of
  NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE.

The rules are written here from the API reference, apart from the
collection's own validation (plugins/module_utils/trainium_limits.py), so
that a mistake in one of them makes a test fail instead of passing twice.
Nothing in the collection knows about this file.
"""

from __future__ import annotations

import re

NAME_RE = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]*$")
NAME_MAX = 63
LABEL_MAX = 63
TAINT_EFFECTS = ("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE")

_INSTALLED = []


def _invalid(message, cluster, nodegroup):
    from moto.eks.exceptions import InvalidParameterException  # pylint: disable=import-outside-toplevel

    return InvalidParameterException(clusterName=cluster, nodegroupName=nodegroup, fargateProfileName=None, addonName=None, message=message)


def name_problem(name):
    """What is wrong with a node group name, or None (the length message is EKS's own words)."""
    if isinstance(name, str) and len(name) > NAME_MAX:
        return f"nodeGroupName can't be longer than {NAME_MAX} characters!"
    if not isinstance(name, str) or not NAME_RE.match(name):
        return (f"Nodegroup name {name!r} is invalid: it must start with a letter or digit and hold only letters, digits, "
                "hyphens and underscores")
    return None


def label_problems(labels):
    """One message per label EKS refuses."""
    problems = []
    for key, value in (labels or {}).items():
        if not 1 <= len(key) <= LABEL_MAX:
            problems.append(f"Label key {key!r} is invalid: it must be 1-{LABEL_MAX} characters")
        if not 1 <= len(str(value)) <= LABEL_MAX:
            problems.append(f"Label value {value!r} of key {key!r} is invalid: it must be 1-{LABEL_MAX} characters")
    return problems


def taint_problems(taints):
    """One message per taint EKS refuses."""
    problems = []
    for taint in taints or []:
        key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect")
        if not 1 <= len(key) <= LABEL_MAX:
            problems.append(f"Taint key {key!r} is invalid: it must be 1-{LABEL_MAX} characters")
        if len(value) > LABEL_MAX:
            problems.append(f"Taint value {value!r} of key {key!r} is invalid: it must be at most {LABEL_MAX} characters")
        if effect not in TAINT_EFFECTS:
            problems.append(f"Taint effect {effect!r} of key {key!r} is invalid: it must be one of {', '.join(TAINT_EFFECTS)}")
    return problems


def _refuse(problems, cluster, nodegroup):
    if problems:
        raise _invalid("; ".join(problems), cluster, nodegroup)


def install():
    """Wrap EKSBackend.create_nodegroup and update_nodegroup_config (once per process)."""
    if _INSTALLED:
        return
    from moto.eks import models  # pylint: disable=import-outside-toplevel

    create = models.EKSBackend.create_nodegroup
    update = models.EKSBackend.update_nodegroup_config

    def create_nodegroup(self, *args, **kwargs):
        cluster, name = kwargs.get("cluster_name"), kwargs.get("nodegroup_name")
        problems = [p for p in [name_problem(name)] if p]
        problems += label_problems(kwargs.get("labels")) + taint_problems(kwargs.get("taints"))
        _refuse(problems, cluster, name)
        return create(self, *args, **kwargs)

    def update_nodegroup_config(self, *args, **kwargs):
        labels = (kwargs.get("labels") or {}).get("addOrUpdateLabels")
        taints = (kwargs.get("taints") or {}).get("addOrUpdateTaints")
        _refuse(label_problems(labels) + taint_problems(taints), kwargs.get("cluster_name"), kwargs.get("nodegroup_name"))
        return update(self, *args, **kwargs)

    models.EKSBackend.create_nodegroup = create_nodegroup
    models.EKSBackend.update_nodegroup_config = update_nodegroup_config
    _INSTALLED.append(True)
