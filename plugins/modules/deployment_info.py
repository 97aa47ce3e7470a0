#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: deployment_info
short_description: Read the AWS side of a trainium.eks deployment (cluster, node groups, file system)
version_added: 0.4.0
description:
  - Describes the EKS cluster, the named managed node groups and the FSx for Lustre file system
    (found by its C(Name) tag), with one call each, and the file system's free capacity from the
    C(AWS/FSx) metric C(FreeDataStorageCapacity) of the last 30 minutes.
  - A part that does not exist is returned with C(exists=false); nothing fails because a part is missing,
    so C(playbooks/status.yml) can report a deployment half made or half torn down.
  - Reads only; it never changes anything and runs the same in check mode.
author:
  - trainium.eks developers (@trainium-eks)
options:
  cluster_name:
    description: Name of the EKS cluster.
    type: str
    required: true
  nodegroups:
    description: Names of the managed node groups to describe (C(<cluster>-<pool>)).
    type: list
    elements: str
    default: []
  file_system_name:
    description:
      - Value of the C(Name) tag of the FSx for Lustre file system (C(<cluster>-data)).
      - Without it the file system is not looked for (no FSx or CloudWatch call) and RV(file_system) says it does not exist.
    type: str
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: What exists of the deployment on AWS
  trainium.eks.deployment_info:
    cluster_name: trn-bert
    nodegroups: [trn-bert-trn1, trn-bert-system]
    file_system_name: trn-bert-data
  register: aws_status
"""

RETURN = r"""
cluster:
  description: The EKS cluster.
  returned: always
  type: dict
  contains:
    name:
      description: Its name.
      type: str
    exists:
      description: Whether it exists.
      type: bool
    status:
      description: One of C(CREATING), C(ACTIVE), C(DELETING), and so on.
      type: str
    version:
      description: Kubernetes version.
      type: str
    endpoint:
      description: API server endpoint.
      type: str
    arn:
      description: The cluster's ARN.
      type: str
    certificate_authority:
      description: The cluster's CA certificate, base64 (what a kubeconfig's C(certificate-authority-data) holds).
      type: str
nodegroups:
  description: One entry per O(nodegroups), in that order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node group name.
      type: str
    exists:
      description: Whether it exists.
      type: bool
    status:
      description: One of C(ACTIVE), C(CREATING), C(DEGRADED), and so on.
      type: str
    desired:
      description: Desired size.
      type: int
    issues:
      description: The node group's health issues, one C(<code> - <message>) string each.
      type: list
      elements: str
file_system:
  description: The FSx for Lustre file system.
  returned: always
  type: dict
  contains:
    exists:
      description: Whether a live file system carries the name.
      type: bool
    id:
      description: File system ID.
      type: str
    status:
      description: Lifecycle, such as C(CREATING) or C(AVAILABLE).
      type: str
    capacity_gib:
      description: Storage capacity in GiB.
      type: int
    free_gib:
      description: Free capacity in GiB from CloudWatch, null when the metric has no data.
      type: float
    used_percent:
      description: Used share of the capacity in percent, null when the metric has no data.
      type: float
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import fail_on_aws_error
from ansible_collections.trainium.eks.plugins.module_utils.trainium_status import read_aws


def main():
    module = AnsibleAWSModule(
        argument_spec=dict(
            cluster_name=dict(type="str", required=True),
            nodegroups=dict(type="list", elements="str", default=[]),
            file_system_name=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    found = fail_on_aws_error(module, read_aws, module.client("eks"), module.client("fsx"), module.client("cloudwatch"),
                              params["cluster_name"], params["nodegroups"], params["file_system_name"])
    if found is None:
        return
    module.exit_json(changed=False, **found)


if __name__ == "__main__":
    main()
