# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""ECR calls behind trainium.eks.ecr_repository_tags, and the decision what to tag.

community.aws.ecs_ecr cannot tag a repository; this fills that gap. Every call
retries throttling with jittered backoff and turns botocore errors into
``EcrTagsError`` (an ``AnsibleAWSError``), which the module reports with
``fail_json_aws_error``.
"""

from __future__ import annotations

from ansible_collections.amazon.aws.plugins.module_utils.botocore import is_boto3_error_code
from ansible_collections.amazon.aws.plugins.module_utils.errors import AWSErrorHandler
from ansible_collections.amazon.aws.plugins.module_utils.exceptions import AnsibleAWSError
from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry


class EcrTagsError(AnsibleAWSError):
    pass


class EcrTagsErrorHandler(AWSErrorHandler):
    _CUSTOM_EXCEPTION = EcrTagsError

    @classmethod
    def _is_missing(cls):
        return is_boto3_error_code("RepositoryNotFoundException")


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


@EcrTagsErrorHandler.common_error_handler("tag repository")
@AWSRetry.jittered_backoff()
def tag_repository(client, arn, tags):
    client.tag_resource(resourceArn=arn, tags=[{"Key": key, "Value": value} for key, value in sorted(tags.items())])


@EcrTagsErrorHandler.common_error_handler("untag repository")
@AWSRetry.jittered_backoff()
def untag_repository(client, arn, keys):
    client.untag_resource(resourceArn=arn, tagKeys=sorted(keys))


def tag_changes(current, desired, purge):
    """What to set and what to remove so that ``current`` becomes ``desired``.

    Values are compared as strings (AWS stores strings). Without ``purge``,
    tags that are not in ``desired`` are left alone.
    """
    current = {str(key): str(value) for key, value in (current or {}).items()}
    desired = {str(key): str(value) for key, value in (desired or {}).items()}
    to_set = {key: value for key, value in desired.items() if current.get(key) != value}
    to_remove = sorted(key for key in current if key not in desired) if purge else []
    return to_set, to_remove


def ensure_tags(client, name, tags, purge=False, registry_id=None, check_mode=False):
    """Bring the repository's tags to ``tags``; returns the module result (without ``diff``' wrapper)."""
    repository = describe_repository(client, name, registry_id)
    if repository is None:
        return {"found": False}
    arn = repository["repositoryArn"]
    before = list_tags(client, arn)
    to_set, to_remove = tag_changes(before, tags, purge)
    after = {key: value for key, value in before.items() if key not in to_remove}
    after.update(to_set)
    if not check_mode:
        if to_remove:
            untag_repository(client, arn, to_remove)
        if to_set:
            tag_repository(client, arn, to_set)
    return {
        "found": True,
        "changed": bool(to_set or to_remove),
        "repository_arn": arn,
        "before": before,
        "tags": after,
        "added": to_set,
        "removed": to_remove,
    }
