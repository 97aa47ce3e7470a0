# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""AWX surveys: built from the real argument spec, and every choice and bound
a survey offers is checked against the validation pass (deployment_errors)
itself, so that a survey can neither offer a value the validation refuses nor
hide one it accepts at its edges."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml
from test_trainium_deployment_errors import _inventory

from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td
from ansible_collections.trainium.eks.plugins.module_utils import trainium_survey as ts

REPO_ROOT = Path(td.__file__).resolve().parents[2]
SPEC = yaml.safe_load((REPO_ROOT / "roles/preflight/meta/argument_specs.yml").read_text())["argument_specs"]["main"]


@pytest.fixture(name="deployment", params=["local", "aws"])
def fixture_deployment(request):
    # The inventory as Ansible templates it with an empty environment (the test of the inventories does the same).
    variables = _inventory(request.param)
    variables.pop("trainium_aws_endpoint_url")
    assert td.deployment_errors(variables) == []
    return variables


def _errors_with(deployment, answers):
    """The validation's problems with the variables the answers set (cross-field
    rules such as warm-up <= max_steps may still refuse a combination: that is the
    validation's job, not the survey's)."""
    variables = dict(deployment)
    variables.update(ts.apply_survey(deployment, answers))
    targets = [re.escape(path).replace(r"\[\]", r"\[[0-9]+\]") for variable, paths, dummy in ts.QUESTIONS if variable in answers for path in paths]
    named = re.compile("^(" + "|".join(targets) + "):")
    return [line for line in td.deployment_errors(variables) if named.match(line) and "at most trainium_job" not in line]


def _questions(deployment):
    return {q["variable"]: q for q in ts.survey_spec(SPEC, current=ts.current_answers(deployment))["spec"]}


def test_every_question_is_asked_once_with_awx_fields(deployment):
    spec = ts.survey_spec(SPEC, current=ts.current_answers(deployment))
    variables = [q["variable"] for q in spec["spec"]]
    assert variables == list(ts.SURVEY_VARIABLES)
    for question in spec["spec"]:
        assert question["type"] in ("text", "integer", "float", "multiplechoice")
        assert question["question_name"] and question["question_description"]
        assert question["required"] is False


def test_choices_are_the_argument_spec_choices_and_each_passes_validation(deployment):
    questions = _questions(deployment)
    pools = SPEC["options"]["trainium_node_pools"]["options"]
    job = SPEC["options"]["trainium_job"]["options"]
    assert questions["trainium_survey_instance_type"]["choices"] == pools["instance_type"]["choices"]
    assert questions["trainium_survey_precision"]["choices"] == job["precision"]["choices"]
    assert questions["trainium_survey_model_config"]["choices"] == job["model_config"]["choices"]
    for variable, question in questions.items():
        if question["type"] != "multiplechoice":
            continue
        for choice in question["choices"]:
            assert _errors_with(deployment, {variable: choice}) == [], (variable, choice)
        assert _errors_with(deployment, {variable: "not-a-choice"}), variable


def test_integer_bounds_are_exactly_what_validation_accepts(deployment):
    for variable, question in _questions(deployment).items():
        if question["type"] != "integer":
            continue
        low, high = question["min"], question["max"]
        assert _errors_with(deployment, {variable: low}) == [], (variable, low)
        assert _errors_with(deployment, {variable: high}) == [], (variable, high)
        assert _errors_with(deployment, {variable: low - 1}), (variable, low - 1)
        assert _errors_with(deployment, {variable: high + 1}), (variable, high + 1)


def test_node_count_range_is_the_intersection_of_pool_count_and_nnodes(deployment):
    question = _questions(deployment)["trainium_survey_node_count"]
    # A pool may be parked (0) but the job needs a node; a job may span 1000 but a pool holds 100.
    assert (question["min"], question["max"]) == (1, td.MAX_NODES_PER_POOL)


def test_text_lengths_match_the_patterns(deployment):
    name = _questions(deployment)["trainium_survey_cluster_name"]
    assert _errors_with(deployment, {"trainium_survey_cluster_name": "a" * name["max"]}) == []
    assert _errors_with(deployment, {"trainium_survey_cluster_name": "a" * (name["max"] + 1)})
    assert _errors_with(deployment, {"trainium_survey_cluster_name": "a" * name["min"]}) == []
    assert _errors_with(deployment, {"trainium_survey_cluster_name": "a" * (name["min"] - 1)})
    region = _questions(deployment)["trainium_survey_region"]
    for answer in ("us-west-2", "ap-southeast-1", "us-gov-west-1"):
        assert region["min"] <= len(answer) <= region["max"]
        assert _errors_with(deployment, {"trainium_survey_region": answer}) == []


def test_defaults_are_the_inventory_values(deployment):
    questions = _questions(deployment)
    pool = next(p for p in deployment["trainium_node_pools"] if p["name"] == deployment["trainium_job"]["node_pool"])
    assert questions["trainium_survey_cluster_name"]["default"] == deployment["trainium_cluster_name"]
    assert questions["trainium_survey_node_count"]["default"] == pool["count"]
    assert questions["trainium_survey_instance_type"]["default"] == pool["instance_type"]
    # Answering every default changes nothing.
    answers = {q["variable"]: q["default"] for q in questions.values() if "default" in q}
    changed = ts.apply_survey(deployment, answers)
    for key, value in changed.items():
        if key == "trainium_job":
            # Keys the inventory leaves to the argument spec's defaults appear with those defaults.
            assert {k: v for k, v in value.items() if k in deployment[key]} == deployment[key]
        else:
            assert value == deployment[key], key


def test_a_required_question_offers_no_default(deployment):
    """The scale template's new size: launching it to train longer must not size the pool back to the inventory's count."""
    current = ts.current_answers(deployment)
    survey = ts.survey_spec(SPEC, current=current, variables=["trainium_survey_node_count", "trainium_survey_max_steps"],
                            required=["trainium_survey_node_count"])
    questions = {q["variable"]: q for q in survey["spec"]}
    assert questions["trainium_survey_node_count"]["required"] is True and "default" not in questions["trainium_survey_node_count"]
    assert questions["trainium_survey_max_steps"]["required"] is False
    assert questions["trainium_survey_max_steps"]["default"] == current["trainium_survey_max_steps"]
    with pytest.raises(ts.SurveyError, match="required: trainium_survey_region not among the questions asked"):
        ts.survey_spec(SPEC, variables=["trainium_survey_node_count"], required=["trainium_survey_region"])


def test_node_count_sets_the_job_pool_and_nnodes_without_touching_the_input(deployment):
    before = copy.deepcopy(deployment)
    changed = ts.apply_survey(deployment, {"trainium_survey_node_count": "4", "trainium_survey_max_steps": 7, "trainium_survey_region": ""})
    assert deployment == before
    index = [p["name"] for p in deployment["trainium_node_pools"]].index(deployment["trainium_job"]["node_pool"])
    assert changed["trainium_node_pools"][index]["count"] == 4
    assert changed["trainium_job"]["nnodes"] == 4
    assert changed["trainium_job"]["max_steps"] == 7
    assert set(changed) == {"trainium_node_pools", "trainium_job"}


def test_no_answers_change_nothing_and_unknown_answers_are_refused(deployment):
    assert ts.apply_survey(deployment, {}) == {}
    assert ts.apply_survey(deployment, {"trainium_survey_node_count": None}) == {}
    with pytest.raises(ts.SurveyError, match="trainium_survey_nodes: not survey variables"):
        ts.apply_survey(deployment, {"trainium_survey_nodes": 3})


def test_job_pool_that_does_not_exist_is_named():
    variables = {"trainium_node_pools": [{"name": "a", "count": 1}], "trainium_job": {"node_pool": "b"}}
    with pytest.raises(ts.SurveyError, match="trainium_job.node_pool: got 'b'"):
        ts.apply_survey(variables, {"trainium_survey_node_count": 2})


def test_a_question_whose_variable_left_the_argument_spec_is_an_error():
    spec = copy.deepcopy(SPEC)
    del spec["options"]["trainium_job"]["options"]["precision"]
    with pytest.raises(ts.SurveyError, match="trainium_job.precision"):
        ts.survey_spec(spec)
    with pytest.raises(ts.SurveyError, match="no survey question for trainium_survey_bogus"):
        ts.survey_spec(SPEC, variables=["trainium_survey_bogus"])


def test_a_text_answer_with_a_trailing_newline_is_refused(deployment):
    # A survey answer sent through the API may carry one; "$" in the patterns would let it through.
    assert _errors_with(deployment, {"trainium_survey_cluster_name": "trn-bert\n"})
    assert _errors_with(deployment, {"trainium_survey_region": "us-west-2\n"})
