#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validate_variables
short_description: Check the deployment variables and every variable of the given roles, all problems at once
version_added: 0.3.0
description:
  - The validation pass of trainium.eks. It runs on the controller, calls no API and creates nothing.
  - Fails first when ansible-core is older than 2.19.
  - Checks the deployment variables (C(trainium_*)) once, then, for each role in O(roles), every option of
    the role's argument spec (entry point C(main)) with the value the run would use (inventory and extra
    vars first, else the role default) - type, choices, list elements, suboptions; then the role's
    cross-field rules and ranges, which an argument spec cannot express (for example the IMDS hop limit
    1-64, FSx capacity steps, public API endpoint CIDRs, placement groups with capacity reservations).
  - A default that reads a later stage's facts (for example C(network_facts.vpc_id)) is not known yet and
    is left to the role.
  - "Fails with one line per problem, C(<variable>: got <value> (<type>); allowed: <what>), and nothing else."
  - On success sets the fact C(trainium_deployment), the normalized deployment - cluster name, region,
    tags, resource names and every node pool with its defaults applied (C(resource_name), C(min_count),
    C(max_count), C(root_volume_size_gib), C(labels), C(taints), C(tags)) - with a record of what was
    checked (C(validation) - bound to this run, digests of the resolved deployment variables and of each
    role variable's resolved value).
  - Run again in the same run (each role's first task does), it finds that record and checks nothing again
    for a role whose variables resolve to the values the validation pass saw; a role entered with other
    values (include_role or play vars, a changed template input, a default whose fact exists now) is
    checked whole, the variables that differ named in the result. Only the fact this action set in this
    run is a record; a C(trainium_deployment) from the inventory, play or extra vars or a fact cache is not.
author:
  - trainium.eks developers (@trainium-eks)
options:
  roles:
    description:
      - The trainium.eks roles whose variables to check, for example the roles of every stage the run
        reaches. The deployment variables are always checked.
    type: list
    elements: str
    default: []
  scope:
    description:
      - V(all) checks every deployment variable and the variables of O(roles).
      - V(names) checks only what finding the deployment's resources by name needs - cluster name,
        region, endpoint, tags, the node pools' names, the storage and image mappings - so that a
        teardown never fails on a value it does not use (a capacity reservation that has ended, a
        node count). O(roles) must be empty.
    type: str
    choices: [all, names]
    default: all
    version_added: 0.4.0
  refuse_undeclared:
    description:
      - Also refuse every variable of the run whose name carries the prefix of a role of this collection
        (C(<role>_)) or C(trainium_) and that nothing declares - no role's argument spec (any entry point),
        no deployment variable, no playbook input, no survey answer - one line each, naming the closest
        declared variable. The value is not printed.
      - "For example C(fsx_lustre_storage_capacity: not a variable of this collection; did you mean
        fsx_lustre_storage_capacity_gib?)."
      - Variables of other collections and Ansible's own are left alone, and so are the names listed in
        C(trainium_other_variables).
      - The validation pass (C(playbooks/validate.yml)) sets it; it runs before any role, when the run's
        variables are the inventory's, the extra variables and the survey's answers.
    type: bool
    default: false
    version_added: 0.5.0
extends_documentation_fragment:
  - trainium.eks.controller_action
attributes:
  check_mode:
    support: full
    description: Reads only; the same in check mode.
notes:
  - An action plugin; it reads the roles' C(meta/argument_specs.yml) and C(defaults/main.yml) from the
    installed collection.
"""

EXAMPLES = r"""
- name: Check every variable of the infrastructure stage before anything is created
  trainium.eks.validate_variables:
    roles: [preflight, network, eks_cluster, trn_launch_template, trn_nodegroup, ecr, fsx_lustre]
    refuse_undeclared: true
"""

RETURN = r"""
ansible_facts:
  description: The normalized deployment.
  returned: success
  type: dict
  contains:
    trainium_deployment:
      description:
        - Cluster name, region, endpoint, Kubernetes version, tags, resource names, node pools with defaults, storage,
          image, dataset, job, and C(validation) (what was checked, for the roles' entries later in the run).
        - Not set again by a role's entry when this run's record is there.
      type: dict
      returned: success
"""
