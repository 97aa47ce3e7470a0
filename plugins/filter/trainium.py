# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Filters that apply the trainium.eks deployment rules (see module_utils)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment


def deployment_errors(variables):
    if not isinstance(variables, dict):
        raise AnsibleFilterError(f"deployment_errors expects a mapping of trainium_* variables, got {type(variables).__name__}")
    return trainium_deployment.deployment_errors(variables)


def place_node_pools(capacity, node_pools, region):
    return trainium_deployment.place_node_pools(node_pools, capacity, region)


def job_fit_errors(job, node_pools, capacity):
    return trainium_deployment.job_fit_errors(job, node_pools, capacity)


class FilterModule:
    def filters(self):
        return {
            "deployment_errors": deployment_errors,
            "place_node_pools": place_node_pools,
            "job_fit_errors": job_fit_errors,
        }
