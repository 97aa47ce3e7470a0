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
  - Three other shapes of wait - until enough items of a list are ready (a C(*) key in O(state_path) and
    O(ready_count)), until what a list names is gone (O(gone)), and until a module that acts is no longer
    refused (O(retry_on), for example a deletion refused while dependencies linger).
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
      - A C(*) key maps the rest of the path over a list, for example V(result.*.state) for the states of the
        NAT gateways that M(amazon.aws.ec2_vpc_nat_gateway_info) lists; the progress lines count them
        (V(1 available, 1 pending)).
      - A key that is missing gives V(null).
    type: str
    required: true
  ready:
    description:
      - States that end the wait.
      - With a C(*) key in O(state_path), the wait ends when O(ready_count) items are in one of these states.
      - Required unless O(gone=true).
    type: list
    elements: raw
    default: []
  ready_count:
    description:
      - Only with a C(*) key in O(state_path) - how many items must be in one of the O(ready) states.
      - Default is every item (and at least one).
    type: int
  gone:
    description:
      - Wait until the value at O(state_path) is V(null) or an empty list - what the module lists is gone -
        instead of a state in O(ready).
    type: bool
    default: false
  failed:
    description:
      - States that end the wait with a failure (a resource that will never be ready); with a C(*) key in
        O(state_path), when any item is in one of them.
    type: list
    elements: raw
    default: []
  retry_on:
    description:
      - Failures of O(module) that do not end the wait - an error code (V(DependencyViolation)) or a part of
        the failure message. The module runs again after O(delay), until it succeeds and its state is ready,
        or O(timeout) (the failure then names the last message).
      - For a module that acts, such as a deletion refused while network interfaces linger; with this option
        the task reports the change of the run that succeeded (without it, a wait changes nothing).
    type: list
    elements: str
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
  first_delay:
    description:
      - Seconds before the second poll; each next pause is twice the last, up to O(delay). A state that
        changes within seconds (a Job of a few seconds, a NAT gateway on a fast day) is then seen within about
        a second, a long wait is polled every O(delay) seconds as without it.
      - V(0) (the default) polls every O(delay) seconds from the start.
    type: float
    default: 0
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

- name: Wait until both NAT gateways of the VPC are available
  trainium.eks.wait_for_state:
    module: amazon.aws.ec2_vpc_nat_gateway_info
    module_args:
      filters:
        vpc-id: vpc-0123456789abcdef0
        state: [pending, available]
    state_path: result.*.state
    ready: [available]
    ready_count: 2
    what: NAT gateways of vpc-0123456789abcdef0
    typical: 1-3 min on AWS

- name: Wait until the deleted NAT gateways are gone
  trainium.eks.wait_for_state:
    module: amazon.aws.ec2_vpc_nat_gateway_info
    module_args:
      filters:
        vpc-id: vpc-0123456789abcdef0
        state: [pending, available, deleting]
    state_path: result.*.state
    gone: true
    what: NAT gateways of vpc-0123456789abcdef0 (deleting)

- name: Delete a security group, again while network interfaces still hold it
  trainium.eks.wait_for_state:
    module: amazon.aws.ec2_security_group
    module_args:
      group_id: sg-0123456789abcdef0
      state: absent
    state_path: group_id
    ready: [null]
    retry_on: [DependencyViolation]
    what: security group sg-0123456789abcdef0 (deleting)
    delay: 10
    timeout: 300
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
refused:
  description: The message of the last run of O(module) refused with one of O(retry_on).
  returned: when the wait ended while the module was refused (a timeout, check mode)
  type: str
"""
