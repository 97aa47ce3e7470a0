#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: wait_for_state
short_description: Wait until a resource reaches a state, printing progress instead of retries
version_added: 0.4.0
description:
  - Runs O(module) with O(module_args) every O(delay) seconds until the value at O(state_path) of its
    result is one of O(ready), and prints one progress line when the state changes (and every
    O(report_every) seconds) - what it waits for, the state, the time so far and the typical duration.
  - Replaces C(until)/C(retries) loops, which print a C(FAILED - RETRYING) line at every poll.
  - Stops at once when the state is one of O(failed), and after O(timeout) seconds.
  - The polled module gets the task's C(module_defaults) (for example the C(group/trainium.eks.aws) region
    and endpoint), as builtin actions such as C(gather_facts) give theirs.
  - In check mode it polls once and reports the state.
author:
  - trainium.eks developers (@trainium-eks)
options:
  module:
    description:
      - Fully qualified name of the module to poll; it must only read with O(module_args).
    type: str
    required: true
  module_args:
    description:
      - Arguments of O(module).
    type: dict
    default: {}
  state_path:
    description:
      - Dotted path of the state in the module's result, for example V(nodegroup.status).
    type: str
    required: true
  ready:
    description:
      - States that end the wait.
    type: list
    elements: raw
    required: true
  failed:
    description:
      - States that end the wait with a failure (a resource that will never be ready).
    type: list
    elements: raw
    default: []
  what:
    description:
      - What is waited for, as the progress lines name it, for example V(node group trn-prod-trn1).
    type: str
    required: true
  typical:
    description:
      - How long it usually takes, for the progress lines, for example V(about 5 min on AWS).
    type: str
  delay:
    description:
      - Seconds between polls.
    type: float
    default: 15
  timeout:
    description:
      - Seconds after which the task fails.
    type: float
    default: 1800
  report_every:
    description:
      - Seconds between progress lines while the state does not change.
    type: float
    default: 60
attributes:
  check_mode:
    support: full
    description: Polls once.
  diff_mode:
    support: none
    description: Nothing to show.
  platform:
    support: full
    platforms: all
    description: An action plugin; the polled module runs where the task runs.
"""

EXAMPLES = r"""
- name: Wait for the node group to become ACTIVE
  trainium.eks.wait_for_state:
    module: trainium.eks.eks_nodegroup
    module_args:
      cluster_name: trn-prod
      name: trn-prod-trn1
    state_path: nodegroup.status
    ready: [ACTIVE]
    failed: [CREATE_FAILED, DEGRADED, DELETE_FAILED]
    what: node group trn-prod-trn1
    typical: about 5 min on AWS
    delay: 20
    timeout: 2400
  register: nodegroup_now
"""

RETURN = r"""
state:
  description: The last state seen.
  returned: always
  type: raw
  sample: ACTIVE
polls:
  description: How many times the module ran.
  returned: always
  type: int
elapsed:
  description: Seconds waited.
  returned: always
  type: float
"""
