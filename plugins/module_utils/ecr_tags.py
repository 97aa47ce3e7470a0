# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""ECR calls behind trainium.eks.ecr_repository and ecr_repository_tags, and what they decide.

community.aws.ecs_ecr cannot tag a repository, sends kmsKey=None with AES256
and cannot plan a lifecycle policy in check mode; ecr_repository does the
whole repository in one module call, ecr_repository_tags only its tags. Every call
retries throttling with jittered backoff and turns botocore errors into
``EcrTagsError`` (a ``TrainiumAWSError``), which the module reports with
``trainium_common.fail_on_aws_error``. The tag diff and the tag calls are
``trainium_common``'s.
"""

from __future__ import annotations

import json

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common


class EcrTagsError(common.TrainiumAWSError):
    pass


EcrTagsErrorHandler = common.error_handler(EcrTagsError, "RepositoryNotFoundException")


@EcrTagsErrorHandler.list_error_handler("describe repository", default_value=None)
@AWSRetry.jittered_backoff()
def describe_repository(client, name, registry_id=None):
    params = {"repositoryNames": [name]}
    if registry_id:
        params["registryId"] = registry_id
    return client.describe_repositories(**params)["repositories"][0]


@EcrTagsErrorHandler.common_error_handler("list repository tags")
@AWSRetry.jittered_backoff()
def list_tags(client, arn):
    return {tag["Key"]: tag["Value"] for tag in client.list_tags_for_resource(resourceArn=arn).get("tags", [])}


def ensure_tags(client, name, tags, purge=False, registry_id=None, check_mode=False):
    """Bring the repository's tags to ``tags``; returns the module result (without ``diff``' wrapper)."""
    repository = describe_repository(client, name, registry_id)
    if repository is None:
        return {"found": False}
    arn = repository["repositoryArn"]
    before = list_tags(client, arn)
    to_set, to_remove = common.tag_diff(before, tags, purge)
    if not check_mode:
        common.update_tags(client, arn, to_set, to_remove)
    return {
        "found": True,
        "changed": bool(to_set or to_remove),
        "repository_arn": arn,
        "before": before,
        "tags": common.tags_after(before, to_set, to_remove),
        "added": to_set,
        "removed": to_remove,
    }


# ------------------------------------------------------------ the repository
# Behind trainium.eks.ecr_repository: create, configure, tag and delete a
# repository in one module call (about 3 requests when nothing changes).

SCAN_ON_PUSH = "scanOnPush"
EcrPolicyErrorHandler = common.error_handler(EcrTagsError, "LifecyclePolicyNotFoundException", "RepositoryNotFoundException")


@EcrPolicyErrorHandler.list_error_handler("read the lifecycle policy", default_value=None)
@AWSRetry.jittered_backoff()
def _get_lifecycle_policy_text(client, name, registry_id=None):
    return client.get_lifecycle_policy(**_repository_args(name, registry_id))["lifecyclePolicyText"]


def get_lifecycle_policy(client, name, registry_id=None):
    """The repository's lifecycle policy as data, None when it has none."""
    text = _get_lifecycle_policy_text(client, name, registry_id)
    return None if text is None else json.loads(text)


def _repository_args(name, registry_id=None):
    args = {"repositoryName": name}
    if registry_id:
        args["registryId"] = registry_id
    return args


def normalize_policy(policy):
    """``policy`` (data or JSON text) as plain data with its rules in priority order, for comparison."""
    if policy is None:
        return None
    data = json.loads(policy) if isinstance(policy, str) else json.loads(json.dumps(policy))
    rules = data.get("rules")
    if isinstance(rules, list):
        data["rules"] = sorted(rules, key=lambda rule: int(rule.get("rulePriority", 0)))
    return data


def encryption_configuration(encryption_type, kms_key=None):
    """The ``encryptionConfiguration`` of CreateRepository (no kmsKey with AES256)."""
    config = {"encryptionType": encryption_type}
    if encryption_type == "KMS" and kms_key:
        config["kmsKey"] = kms_key
    return config


def plan_repository(repository, policy_now, wanted):
    """What to change on an existing ``repository`` to make it ``wanted``.

    ``wanted``: dict with ``image_tag_mutability`` (MUTABLE/IMMUTABLE),
    ``scan_on_push`` (bool), ``lifecycle_policy`` (data or None: leave it) and
    ``encryption_type``/``kms_key``. Returns a dict of the updates to make
    (``image_tag_mutability``, ``scan_on_push``, ``lifecycle_policy``) and
    ``warnings`` for what ECR cannot change (the encryption, fixed at creation).
    """
    updates, warnings = {}, []
    if repository.get("imageTagMutability") != wanted["image_tag_mutability"]:
        updates["image_tag_mutability"] = wanted["image_tag_mutability"]
    if bool(repository.get("imageScanningConfiguration", {}).get(SCAN_ON_PUSH)) != wanted["scan_on_push"]:
        updates["scan_on_push"] = wanted["scan_on_push"]
    desired_policy = normalize_policy(wanted.get("lifecycle_policy"))
    if desired_policy is not None and normalize_policy(policy_now) != desired_policy:
        updates["lifecycle_policy"] = desired_policy
    encryption = repository.get("encryptionConfiguration") or {"encryptionType": "AES256"}
    if encryption.get("encryptionType") != wanted["encryption_type"] or (
            wanted["encryption_type"] == "KMS" and wanted.get("kms_key") and encryption.get("kmsKey") != wanted["kms_key"]):
        warnings.append(
            f"encryption_type: the repository {repository['repositoryName']} is encrypted with "
            f"{encryption.get('encryptionType')}{(' ' + encryption['kmsKey']) if encryption.get('kmsKey') else ''}, "
            f"not {wanted['encryption_type']}{(' ' + wanted['kms_key']) if wanted.get('kms_key') else ''}; "
            "ECR fixes the encryption at creation: delete and recreate the repository to change it")
    return {"updates": updates, "warnings": warnings}


@EcrTagsErrorHandler.common_error_handler("create the repository")
@AWSRetry.jittered_backoff()
def create_repository(client, name, wanted, tags, registry_id=None):
    args = _repository_args(name, registry_id)
    args.update(
        imageTagMutability=wanted["image_tag_mutability"],
        imageScanningConfiguration={SCAN_ON_PUSH: wanted["scan_on_push"]},
        encryptionConfiguration=encryption_configuration(wanted["encryption_type"], wanted.get("kms_key")),
    )
    if tags:
        args["tags"] = common.tag_list(tags)
    return client.create_repository(**args)["repository"]


@EcrTagsErrorHandler.common_error_handler("update the repository")
@AWSRetry.jittered_backoff()
def apply_updates(client, name, updates, registry_id=None):
    args = _repository_args(name, registry_id)
    if "image_tag_mutability" in updates:
        client.put_image_tag_mutability(imageTagMutability=updates["image_tag_mutability"], **args)
    if "scan_on_push" in updates:
        client.put_image_scanning_configuration(imageScanningConfiguration={SCAN_ON_PUSH: updates["scan_on_push"]}, **args)
    if "lifecycle_policy" in updates:
        client.put_lifecycle_policy(lifecyclePolicyText=json.dumps(updates["lifecycle_policy"], sort_keys=True), **args)


@EcrTagsErrorHandler.deletion_error_handler("delete the repository")
@AWSRetry.jittered_backoff()
def delete_repository(client, name, force, registry_id=None):
    client.delete_repository(force=force, **_repository_args(name, registry_id))
    return True


def missing_owner_tags(tags_now, owner_tags):
    """The owner tags (key=value) an existing repository lacks; empty when it carries them all (or none are asked)."""
    return sorted(f"{key}={value}" for key, value in (owner_tags or {}).items() if (tags_now or {}).get(str(key)) != str(value))


def ensure_repository(client, name, wanted, tags, purge_tags=True, registry_id=None, check_mode=False, owner_tags=None):
    """Bring the repository ``name`` to ``wanted`` and ``tags``; returns the module result without its diff wrapper.

    The result has ``changed``, ``created``, ``repository`` (None for a
    repository that check mode would create), ``tags``, ``lifecycle_policy``,
    ``updates`` (the settings changed), ``warnings`` and ``before`` (the state
    before, for the diff; None when there was no repository).
    """
    repository = describe_repository(client, name, registry_id)
    desired_policy = normalize_policy(wanted.get("lifecycle_policy"))
    if repository is None:
        result = {"changed": True, "created": True, "before": None, "warnings": [],
                  "updates": {}, "tags": {str(k): str(v) for k, v in (tags or {}).items()}, "lifecycle_policy": desired_policy,
                  "repository": None}
        if not check_mode:
            result["repository"] = create_repository(client, name, wanted, tags, registry_id)
            if desired_policy is not None:
                apply_updates(client, name, {"lifecycle_policy": desired_policy}, registry_id)
        return result
    tags_now = list_tags(client, repository["repositoryArn"])
    missing = missing_owner_tags(tags_now, owner_tags)
    if missing:
        return {"refused": f"name: the ECR repository {name} exists without the tags {', '.join(missing)} of this deployment; "
                           "allowed: a repository this deployment made, or a new name (or adopt this one on purpose)"}
    policy_now = get_lifecycle_policy(client, name, registry_id)
    plan = plan_repository(repository, policy_now, wanted)
    to_set, to_remove = common.tag_diff(tags_now, tags, purge_tags)
    if not check_mode:
        apply_updates(client, name, plan["updates"], registry_id)
        common.update_tags(client, repository["repositoryArn"], to_set, to_remove)
    before = {
        "image_tag_mutability": repository.get("imageTagMutability"),
        "scan_on_push": bool(repository.get("imageScanningConfiguration", {}).get(SCAN_ON_PUSH)),
        "lifecycle_policy": normalize_policy(policy_now),
        "tags": tags_now,
    }
    return {
        "changed": bool(plan["updates"] or to_set or to_remove),
        "created": False,
        "before": before,
        "updates": plan["updates"],
        "warnings": plan["warnings"],
        "tags": common.tags_after(tags_now, to_set, to_remove),
        "lifecycle_policy": desired_policy if "lifecycle_policy" in plan["updates"] else normalize_policy(policy_now),
        "repository": repository,
    }
