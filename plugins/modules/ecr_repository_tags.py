#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ecr_repository_tags
short_description: Manage the tags of an Amazon ECR repository
version_added: 0.2.0
description:
  - Sets the tags of an existing ECR repository, and with O(purge_tags=true)
    removes the tags it does not list.
  - M(community.aws.ecs_ecr) creates and configures repositories but cannot tag
    them; use this module after it.
  - Only tags that differ are sent; a second run reports no change.
author:
  - trainium.eks developers (@trainium-eks)
options:
  tags:
    description:
      - Tags the repository must carry.
    type: dict
    required: true
    aliases: [resource_tags]
  purge_tags:
    description:
      - When V(true), remove the tags of the repository that O(tags) does not list.
    type: bool
    default: false
notes:
  - Fails when the repository does not exist.
  - Needs C(ecr:DescribeRepositories), C(ecr:ListTagsForResource),
    C(ecr:TagResource) and, for O(purge_tags=true), C(ecr:UntagResource).
  - Supports check mode and diff mode.
extends_documentation_fragment:
  - trainium.eks.ecr_repository
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Create the repository
  community.aws.ecs_ecr:
    name: bert-pretrain-neuron
    image_tag_mutability: immutable
    scan_on_push: true

- name: Tag it
  trainium.eks.ecr_repository_tags:
    name: bert-pretrain-neuron
    tags:
      trainium.eks/cluster: trn-rehearsal
      ManagedBy: trainium.eks
      Name: bert-pretrain-neuron
"""

RETURN = r"""
repository_arn:
  description: ARN of the repository.
  returned: always
  type: str
  sample: arn:aws:ecr:us-west-2:123456789012:repository/bert-pretrain-neuron
tags:
  description: The tags of the repository after the task (what they would be, in check mode).
  returned: always
  type: dict
  sample: {"ManagedBy": "trainium.eks", "Name": "bert-pretrain-neuron"}
added:
  description: Tags set or changed by the task.
  returned: always
  type: dict
  sample: {"Name": "bert-pretrain-neuron"}
removed:
  description: Keys of the tags removed by the task (only with O(purge_tags=true)).
  returned: always
  type: list
  elements: str
  sample: []
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils.ecr_tags import ensure_tags
from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import fail_on_aws_error


def main():
    argument_spec = dict(
        name=dict(type="str", required=True),
        registry_id=dict(type="str"),
        tags=dict(type="dict", required=True, aliases=["resource_tags"]),
        purge_tags=dict(type="bool", default=False),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    client = module.client("ecr")
    result = fail_on_aws_error(
        module, ensure_tags, client, module.params["name"], module.params["tags"],
        purge=module.params["purge_tags"], registry_id=module.params["registry_id"], check_mode=module.check_mode,
    )
    if result is None:
        return
    if not result.pop("found"):
        module.fail_json(msg=f"name: got {module.params['name']}; allowed: an existing ECR repository (not found)")
    else:
        before = result.pop("before")
        if module._diff:
            result["diff"] = {"before": {"tags": before}, "after": {"tags": result["tags"]}}
        module.exit_json(**result)


if __name__ == "__main__":
    main()
