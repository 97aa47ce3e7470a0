#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ecr_repository
short_description: Create, configure, tag or delete an Amazon ECR repository in one call
version_added: 0.4.0
description:
  - Creates an ECR repository with its tag mutability, scan on push,
    encryption and tags, and puts its lifecycle policy; on an existing
    repository it changes only what differs.
  - One module call where M(community.aws.ecs_ecr) plus
    M(trainium.eks.ecr_repository_tags) took two; when nothing differs it
    makes three read requests (describe, lifecycle policy, tags).
  - Check mode plans everything, also the lifecycle policy of a repository
    that does not exist yet; diff mode shows the settings, policy and tags before and after.
  - The encryption is fixed when ECR creates a repository; a repository
    encrypted otherwise gets a warning, not a change.
author:
  - trainium.eks developers (@trainium-eks)
options:
  state:
    description:
      - V(present) creates or updates the repository, V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  image_tag_mutability:
    description:
      - Whether an image tag can be pushed again with other content.
    type: str
    choices: [mutable, immutable]
    default: immutable
  scan_on_push:
    description:
      - Scan every image for vulnerabilities when it is pushed (basic scanning).
    type: bool
    default: true
  encryption_type:
    description:
      - Encryption at rest, used when the repository is created.
    type: str
    choices: [AES256, KMS]
    default: AES256
  kms_key:
    description:
      - KMS key (ARN, ID or alias) for O(encryption_type=KMS); the AWS managed key for ECR when not set.
    type: str
  lifecycle_policy:
    description:
      - The lifecycle policy (the document of ECR's PutLifecyclePolicy, as data or JSON text).
      - Not set leaves the repository's policy as it is.
    type: raw
  tags:
    description:
      - Tags the repository must carry.
    type: dict
    aliases: [resource_tags]
  purge_tags:
    description:
      - Remove the tags of the repository that O(tags) does not list (tags starting with C(aws:) stay).
    type: bool
    default: true
  owner_tags:
    description:
      - Tags that mark the repository as the caller's. An existing repository without all of them is
        neither changed (O(state=present) fails naming the missing tags) nor deleted (O(state=absent)
        leaves it, with a warning), so that a repository of the same name that someone else made
        keeps its settings, tags and images.
      - Unset, any repository of that name is managed.
    type: dict
    version_added: 0.4.0
  force_absent:
    description:
      - With O(state=absent), delete the repository also when it holds images (they are deleted with it).
    type: bool
    default: false
notes:
  - Needs C(ecr:DescribeRepositories), C(ecr:GetLifecyclePolicy), C(ecr:ListTagsForResource) and, to change
    anything, C(ecr:CreateRepository), C(ecr:PutLifecyclePolicy), C(ecr:PutImageTagMutability),
    C(ecr:PutImageScanningConfiguration), C(ecr:TagResource), C(ecr:UntagResource), C(ecr:DeleteRepository).
  - Supports check mode and diff mode.
extends_documentation_fragment:
  - trainium.eks.ecr_repository
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Repository of the training image, untagged images expire after 7 days
  trainium.eks.ecr_repository:
    name: bert-pretrain-neuron
    image_tag_mutability: immutable
    scan_on_push: true
    lifecycle_policy:
      rules:
        - rulePriority: 1
          description: Expire untagged images after 7 days
          selection: {tagStatus: untagged, countType: sinceImagePushed, countUnit: days, countNumber: 7}
          action: {type: expire}
    tags:
      ManagedBy: trainium.eks
      Name: bert-pretrain-neuron

- name: Delete it with its images
  trainium.eks.ecr_repository:
    name: bert-pretrain-neuron
    state: absent
    force_absent: true
"""

RETURN = r"""
repository:
  description:
    - The repository as ECR describes it (C(repositoryArn), C(repositoryUri), C(registryId), ...).
    - Empty when check mode would create it or it is absent.
  returned: always
  type: dict
  sample: {"repositoryName": "bert-pretrain-neuron", "registryId": "123456789012",
           "repositoryUri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/bert-pretrain-neuron"}
created:
  description: Whether the task created the repository (or would, in check mode).
  returned: always
  type: bool
deleted:
  description: Whether the task deleted the repository (or would, in check mode).
  returned: when O(state=absent)
  type: bool
kept:
  description: The repository was left in place because it lacks O(owner_tags).
  returned: when O(state=absent) left a repository
  type: bool
updates:
  description: The settings the task changed (or would change), by option name.
  returned: when O(state=present)
  type: dict
  sample: {"scan_on_push": true}
tags:
  description: The tags of the repository after the task (what they would be, in check mode).
  returned: when O(state=present)
  type: dict
lifecycle_policy:
  description: The lifecycle policy after the task, its rules in priority order.
  returned: when O(state=present)
  type: dict
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils import ecr_tags
from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import fail_on_aws_error, warn


def absent(module, client, params):
    """The result of deleting the repository (nothing to do when it is not there)."""
    repository = fail_on_aws_error(module, ecr_tags.describe_repository, client, params["name"], params["registry_id"])
    if repository is None:
        return {"changed": False, "deleted": False, "created": False, "repository": {}}
    if params["owner_tags"]:
        missing = fail_on_aws_error(module, lambda: ecr_tags.missing_owner_tags(
            ecr_tags.list_tags(client, repository["repositoryArn"]), params["owner_tags"]))
        if missing:
            warn(module, f"ECR repository {params['name']} left in place: it lacks the tags {', '.join(missing)} of this deployment")
            return {"changed": False, "deleted": False, "created": False, "kept": True, "repository": repository}
    if not module.check_mode:
        fail_on_aws_error(module, ecr_tags.delete_repository, client, params["name"], params["force_absent"], params["registry_id"])
    result = {"changed": True, "deleted": True, "created": False, "repository": {}}
    if module._diff:
        result["diff"] = {"before": {"repository": params["name"]}, "after": {}}
    return result


def present(module, client, params):
    """The result of creating or updating the repository, with its --diff; None after a failure."""
    wanted = {
        "image_tag_mutability": params["image_tag_mutability"].upper(),
        "scan_on_push": params["scan_on_push"],
        "encryption_type": params["encryption_type"],
        "kms_key": params["kms_key"],
        "lifecycle_policy": params["lifecycle_policy"],
    }
    try:
        ecr_tags.normalize_policy(params["lifecycle_policy"])
    except (TypeError, ValueError, AttributeError) as e:
        module.fail_json(msg=f"lifecycle_policy: got {params['lifecycle_policy']!r}; allowed: an ECR lifecycle policy as data or JSON text ({e})")
    result = fail_on_aws_error(
        module, ecr_tags.ensure_repository, client, params["name"], wanted, params["tags"],
        purge_tags=params["purge_tags"], registry_id=params["registry_id"], check_mode=module.check_mode,
        owner_tags=params["owner_tags"],
    )
    if "refused" in result:
        module.fail_json(msg=result["refused"])
        return None
    for warning in result.pop("warnings"):
        warn(module, warning)
    before = result.pop("before")
    if module._diff:
        after = {
            "image_tag_mutability": wanted["image_tag_mutability"],
            "scan_on_push": wanted["scan_on_push"],
            "lifecycle_policy": result["lifecycle_policy"],
            "tags": result["tags"],
        }
        result["diff"] = {"before": before or {}, "after": after}
    result["repository"] = result["repository"] or {}
    return result


def main():
    argument_spec = dict(
        name=dict(type="str", required=True),
        registry_id=dict(type="str"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        image_tag_mutability=dict(type="str", choices=["mutable", "immutable"], default="immutable"),
        scan_on_push=dict(type="bool", default=True),
        encryption_type=dict(type="str", choices=["AES256", "KMS"], default="AES256"),
        kms_key=dict(type="str", no_log=False),
        lifecycle_policy=dict(type="raw"),
        tags=dict(type="dict", aliases=["resource_tags"]),
        purge_tags=dict(type="bool", default=True),
        owner_tags=dict(type="dict"),
        force_absent=dict(type="bool", default=False),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    client = module.client("ecr")
    if module.params["state"] == "absent":
        result = absent(module, client, module.params)
    else:
        result = present(module, client, module.params)
    if result is not None:
        module.exit_json(**result)


if __name__ == "__main__":
    main()
