# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Filters that apply the trainium.eks deployment rules (see module_utils)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.trainium.eks.plugins.module_utils import (
    trainium_acceptance, trainium_deployment, trainium_eks, trainium_status, trainium_survey, trainium_validation,
)


def deployment_errors(variables):
    if not isinstance(variables, dict):
        raise AnsibleFilterError(f"deployment_errors expects a mapping of trainium_* variables, got {type(variables).__name__}")
    return trainium_deployment.deployment_errors(variables)


def place_node_pools(capacity, node_pools, region):
    return trainium_deployment.place_node_pools(node_pools, capacity, region)


def job_fit_errors(job, node_pools, capacity):
    return trainium_deployment.job_fit_errors(job, node_pools, capacity)


def survey_spec(argument_spec, current=None, variables=None, name="trainium.eks deployment", required=None):
    try:
        return trainium_survey.survey_spec(argument_spec, current=current, variables=variables, name=name, required=required)
    except trainium_survey.SurveyError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def survey_defaults(variables):
    try:
        return trainium_survey.current_answers(variables)
    except trainium_survey.SurveyError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def apply_survey(answers, variables):
    try:
        return trainium_survey.apply_survey(variables, answers)
    except trainium_survey.SurveyError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def log_figures(line):
    return trainium_status.log_figures(line if isinstance(line, str) else "")


def acceptance_plan(variables, prices=None, max_hours=3.0, max_steps=20, capacity_reservation_id=None):
    try:
        return trainium_acceptance.acceptance_plan(variables, prices=prices, max_hours=max_hours, max_steps=max_steps,
                                                   capacity_reservation_id=capacity_reservation_id)
    except trainium_acceptance.AcceptanceError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def volcano_release_sha256(version):
    return trainium_validation.volcano_release_sha256(version)


def secrets_key_policy(caller_arn, admins=None):
    try:
        return trainium_eks.secrets_key_policy(caller_arn, admins or [])
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {
            "deployment_errors": deployment_errors,
            "place_node_pools": place_node_pools,
            "job_fit_errors": job_fit_errors,
            "survey_spec": survey_spec,
            "survey_defaults": survey_defaults,
            "apply_survey": apply_survey,
            "log_figures": log_figures,
            "volcano_release_sha256": volcano_release_sha256,
            "acceptance_plan": acceptance_plan,
            "secrets_key_policy": secrets_key_policy,
        }
