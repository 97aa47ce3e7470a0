# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""ECR calls behind trainium.eks.ecr_repository_tags, and the decision what to tag.

community.aws.ecs_ecr cannot tag a repository; this fills that gap. Every call
retries throttling with jittered backoff and turns botocore errors into
``EcrTagsError`` (a ``TrainiumAWSError``), which the module reports with
``trainium_common.fail_on_aws_error``. The tag diff and the tag calls are
``trainium_common``'s.
"""

from __future__ import annotations

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
