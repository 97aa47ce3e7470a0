# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: stage_plan
short_description: Read the collection's stage plan (meta/stages.yml)
version_added: 0.5.0
author:
  - trainium.eks developers (@trainium-eks)
description:
  - Returns one section of the stage plan of trainium.eks, the file C(meta/stages.yml) of the collection - the stages
    in run order, the roles each runs with the tag that selects each, the teardown order and the AWX job templates.
  - The validation pass, the teardown and the AWX setup read the plan through this lookup, so that a role is added to
    the run in one place. The plan is checked when read (every role named must be a role of the collection).
  - Every section is a list; use the lookup with C(query), or with C(wantlist=true).
options:
  _terms:
    description:
      - The section, one of V(stages) (the stage entries), V(roles) (the roles whose variables the validation pass
        checks, in run order), V(tags) (every stage and role tag), V(teardown_kubernetes) and V(teardown_aws) (what the
        teardown removes, in order), V(job_templates) (one AWX job template per stage and day-2 playbook, each with its
        C(iam), the policy sets of docs/iam its playbook runs under, and C(credential), the AWS credential named after
        them), and for the
        stage named in O(stage) V(stage_roles) (its role entries, in order, each with its tag) and V(stage_tags) (its
        name, its roles' and its checks' tags).
    required: true
  stage:
    description: The stage of V(stage_roles) and V(stage_tags), such as V(platform).
    type: str
"""

EXAMPLES = r"""
- name: The roles the validation pass checks
  ansible.builtin.debug:
    msg: "{{ query('trainium.eks.stage_plan', 'roles') }}"

- name: Every tag of the platform stage
  ansible.builtin.debug:
    msg: "{{ query('trainium.eks.stage_plan', 'stage_tags', stage='platform') }}"

- name: What the teardown removes on the AWS side, in order
  ansible.builtin.debug:
    msg: "{{ query('trainium.eks.stage_plan', 'teardown_aws') | map(attribute='role') | list }}"
"""

RETURN = r"""
_raw:
  description: The items of the section (role names, tags, or mappings with C(role), C(what) and the section's keys).
  type: list
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.trainium.eks.plugins.plugin_utils import trainium_stages


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1:
            raise AnsibleLookupError(f"section: got {list(terms)!r}; allowed: one of {', '.join(trainium_stages.SECTIONS)}")
        try:
            return trainium_stages.section(trainium_stages.load(), terms[0], self.get_option("stage"))
        except (OSError, trainium_stages.StagePlanError) as e:
            raise AnsibleLookupError(str(e)) from e
