# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""AWX / Automation Controller surveys of a trainium.eks deployment.

A survey answers flat extra variables (``trainium_survey_*``); the deployment
model is nested (``trainium_node_pools[].count``, ``trainium_job.max_steps``).
:data:`QUESTIONS` maps one onto the other, :func:`survey_spec` builds a job
template's survey from the preflight role's argument spec (types, choices,
defaults, descriptions) and the validation's ranges (``INT_RANGES``,
``TEXT_LENGTHS``), so that the survey and the checks cannot drift, and
:func:`apply_survey` turns the answers into the deployment variables that the
validation pass then checks like any other input.
"""

from __future__ import annotations

import copy
import re

from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import INT_RANGES, TEXT_LENGTHS

PREFIX = "trainium_survey_"

# (survey variable, deployment variable it sets, question). A path with
# "trainium_node_pools[]" means the pool the job runs on (trainium_job.node_pool).
QUESTIONS = (
    ("trainium_survey_cluster_name", ("trainium_cluster_name",), "EKS cluster name"),
    ("trainium_survey_region", ("trainium_region",), "AWS region"),
    ("trainium_survey_instance_type", ("trainium_node_pools[].instance_type",), "Instance type of the job's node pool"),
    ("trainium_survey_node_count", ("trainium_node_pools[].count", "trainium_job.nnodes"), "Nodes in the job's pool (the job uses all of them)"),
    ("trainium_survey_nproc_per_node", ("trainium_job.nproc_per_node",), "Workers per node"),
    ("trainium_survey_model_config", ("trainium_job.model_config",), "Model size"),
    ("trainium_survey_max_steps", ("trainium_job.max_steps",), "Training steps"),
    ("trainium_survey_batch_size", ("trainium_job.batch_size",), "Micro-batch size per worker"),
    ("trainium_survey_precision", ("trainium_job.precision",), "Training precision"),
)
SURVEY_VARIABLES = tuple(question[0] for question in QUESTIONS)
INTEGER_RE = re.compile(r"^-?[0-9]+$")


class SurveyError(ValueError):
    """A survey that cannot be built or applied."""


def _spec_option(options, path):
    """The argument spec entry of a model path such as ``trainium_node_pools[].count``."""
    head, rest = path.partition(".")[::2]
    entry = options.get(head.replace("[]", ""))
    for part in rest.split(".") if rest else ():
        if entry is None:
            break
        entry = (entry.get("options") or {}).get(part)
    if entry is None:
        raise SurveyError(f"the argument spec has no {path}")
    return entry


def _first_line(description):
    if isinstance(description, (list, tuple)):
        description = description[0] if description else ""
    return " ".join(str(description or "").split())


def _question(variable, paths, text, options, current, required=False):
    entries = [_spec_option(options, path) for path in paths]
    kinds = {entry.get("type", "str") for entry in entries}
    if len(kinds) != 1:
        raise SurveyError(f"{variable}: its variables {', '.join(paths)} have different types {sorted(kinds)}")
    kind = kinds.pop()
    question = {
        "question_name": text,
        "question_description": _first_line(entries[0].get("description")),
        "variable": variable,
        "required": required,
    }
    # A required question offers no default: the answer is the user's, never the inventory's by accident.
    default = None if required else current.get(variable, entries[0].get("default"))
    choices = entries[0].get("choices")
    if choices:
        question.update(type="multiplechoice", choices=[str(choice) for choice in choices])
    elif kind == "int":
        ranges = [INT_RANGES[path] for path in paths if path in INT_RANGES]
        if not ranges:
            raise SurveyError(f"{variable}: no range for {', '.join(paths)} in INT_RANGES")
        # Every variable the answer sets must accept it: the intersection.
        question.update(type="integer", min=max(r[0] for r in ranges), max=min(r[1] for r in ranges))
    elif kind == "float":
        question.update(type="float")
    elif kind == "str":
        low, high = TEXT_LENGTHS.get(paths[0], (1, 1024))
        question.update(type="text", min=low, max=high)
    else:
        raise SurveyError(f"{variable}: type {kind} of {paths[0]} cannot be a survey question")
    if default is not None:
        question["default"] = default if question["type"] in ("integer", "float") else str(default)
    return question


def survey_spec(argument_spec, current=None, variables=None, name="trainium.eks deployment", required=None):
    """The AWX survey of ``variables`` (default: all of :data:`QUESTIONS`).

    ``argument_spec`` is the preflight role's ``argument_specs.main`` (or its
    ``options``); ``current`` maps survey variables to the defaults to offer
    (the inventory's values, see :func:`current_answers`); the ``required``
    survey variables must be answered and offer no default.
    """
    options = argument_spec.get("options", argument_spec)
    wanted = set(variables or SURVEY_VARIABLES)
    unknown = sorted((wanted | set(required or [])) - set(SURVEY_VARIABLES))
    if unknown:
        raise SurveyError(f"no survey question for {', '.join(unknown)}; known: {', '.join(SURVEY_VARIABLES)}")
    if set(required or []) - wanted:
        raise SurveyError(f"required: {', '.join(sorted(set(required) - wanted))} not among the questions asked")
    spec = [
        _question(variable, paths, text, options, current or {}, required=variable in (required or []))
        for variable, paths, text in QUESTIONS
        if variable in wanted
    ]
    return {"name": name, "description": "Answers override the inventory's deployment variables; blank keeps them.", "spec": spec}


def _job_pool_index(variables):
    pools = variables.get("trainium_node_pools")
    job = variables.get("trainium_job")
    if not isinstance(pools, list) or not isinstance(job, dict):
        raise SurveyError("trainium_node_pools and trainium_job must be set (in the inventory) before a survey can change them")
    for index, pool in enumerate(pools):
        if isinstance(pool, dict) and pool.get("name") == job.get("node_pool"):
            return index
    raise SurveyError(f"trainium_job.node_pool: got {job.get('node_pool')!r}; allowed: the name of one of trainium_node_pools")


def current_answers(variables):
    """The survey variables' values in a deployment (the defaults a survey offers)."""
    index = _job_pool_index(variables)
    answers = {}
    for variable, paths, dummy in QUESTIONS:
        head, key = paths[0].partition(".")[::2]
        if head == "trainium_node_pools[]":
            value = variables["trainium_node_pools"][index].get(key)
        elif key:
            value = (variables.get(head) or {}).get(key)
        else:
            value = variables.get(head)
        if value is not None:
            answers[variable] = value
    return answers


def apply_survey(variables, answers):
    """The deployment variables that the non-blank ``answers`` change, as new values.

    Returns a mapping of top-level variable names (``trainium_cluster_name``,
    ``trainium_node_pools``, ``trainium_job``, ...) to their new values; the
    inputs are not modified. The validation pass checks the result.
    """
    given = {key: value for key, value in (answers or {}).items() if value not in (None, "")}
    unknown = sorted(set(given) - set(SURVEY_VARIABLES))
    if unknown:
        raise SurveyError(f"{', '.join(unknown)}: not survey variables; known: {', '.join(SURVEY_VARIABLES)}")
    if not given:
        return {}
    changed = {}
    index = None
    for variable, paths, dummy in QUESTIONS:
        if variable not in given:
            continue
        for path in paths:
            value = _coerce(path, given[variable])
            head, key = path.partition(".")[::2]
            if head == "trainium_node_pools[]":
                if index is None:
                    index = _job_pool_index(variables)
                pools = changed.setdefault("trainium_node_pools", copy.deepcopy(variables["trainium_node_pools"]))
                pools[index][key] = value
            elif key:
                target = changed.setdefault(head, copy.deepcopy(variables.get(head) or {}))
                target[key] = value
            else:
                changed[head] = value
    return changed


def _coerce(path, value):
    """An integer answer given as text (``-e trainium_survey_node_count=4``) becomes the integer; AWX sends integers."""
    if path in INT_RANGES and isinstance(value, str) and INTEGER_RE.match(value.strip()):
        return int(value.strip())
    return value
