# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""What every AWS-calling part of trainium.eks shares.

* Constants with one spelling each: taint effects as EKS spells them
  (``EKS_TAINT_EFFECTS``) and as Kubernetes does
  (``KUBERNETES_TAINT_EFFECTS``), the mapping between the two, capacity
  types, FSx for Lustre deployment types and throughputs.
* One error base, the amazon.aws way: boto3 calls are decorated with a
  handler made by ``error_handler`` (and ``AWSRetry.jittered_backoff()``),
  which turns botocore's ClientError / BotoCoreError into a
  ``TrainiumAWSError``; a module runs its work through
  ``fail_on_aws_error``, which reports such an error with
  ``module.fail_json_aws(e, msg=...)``.
* One tag diff (``tag_diff``, ``tags_after``) and one tag writer
  (``update_tags``) for EKS, FSx, ECR and EC2 resources.
* One waiter (``wait_for`` and its two common cases ``wait_for_status`` and
  ``wait_until_settled``) and one retry of "in use" refusals
  (``retry_in_use``), each bounded in seconds, with injectable clock and
  sleep for tests.
* One plan shape (``new_plan``) for the planners that decide what an
  existing resource needs.
"""

from __future__ import annotations

import re
import time

try:
    import botocore
except ImportError:
    pass  # handled by AnsibleAWSModule

from ansible_collections.amazon.aws.plugins.module_utils.botocore import is_boto3_error_code
from ansible_collections.amazon.aws.plugins.module_utils.errors import AWSErrorHandler
from ansible_collections.amazon.aws.plugins.module_utils.exceptions import AnsibleAWSError
from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from ansible_collections.trainium.eks.plugins.module_utils import trainium_limits as limits

# ---------------------------------------------------------------- constants

# Taint effects: EKS (CreateNodegroup, DescribeNodegroup) spells them in upper
# snake case, Kubernetes (and kubelet, nodeadm, the deployment variables) in
# CamelCase.
EKS_TAINT_EFFECTS = ("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE")
KUBERNETES_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
KUBERNETES_TO_EKS_TAINT_EFFECT = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
EKS_TO_KUBERNETES_TAINT_EFFECT = {eks: kubernetes for kubernetes, eks in KUBERNETES_TO_EKS_TAINT_EFFECT.items()}
# What eks_nodegroup accepts: either spelling.
TAINT_EFFECT_CHOICES = EKS_TAINT_EFFECTS + tuple(KUBERNETES_TO_EKS_TAINT_EFFECT)

# Capacity types of an EKS managed node group, FSx for Lustre deployment
# types and throughputs: spelled in trainium_limits, shared by every layer.
CAPACITY_TYPES = limits.CAPACITY_TYPES
FSX_DEPLOYMENT_TYPES = limits.FSX_DEPLOYMENT_TYPES
FSX_THROUGHPUTS = limits.FSX_THROUGHPUTS

# Tag keys AWS reserves; they are never removed.
AWS_RESERVED_TAG_PREFIX = "aws:"

# Error code with which EKS (and others) refuse to act on a busy resource.
IN_USE_CODE = "ResourceInUseException"


def eks_taint_effect(effect):
    """The EKS spelling of a taint effect given in either spelling; ValueError otherwise."""
    if effect in EKS_TAINT_EFFECTS:
        return effect
    if effect in KUBERNETES_TO_EKS_TAINT_EFFECT:
        return KUBERNETES_TO_EKS_TAINT_EFFECT[effect]
    raise ValueError(effect)


# ------------------------------------------------------------------- errors


class TrainiumAWSError(AnsibleAWSError):
    """Base of every error the collection's AWS calls raise; ``fail_on_aws_error`` reports it."""


def error_handler(exception, *missing_codes):
    """The AWSErrorHandler whose decorators raise ``exception`` (a TrainiumAWSError).

    ``common_error_handler(description)`` turns any botocore error into
    ``exception`` with the message ``Failed to <description>``;
    ``list_error_handler`` and ``deletion_error_handler`` also treat the
    error codes ``missing_codes`` as "not there" (default value / False).
    """

    class Handler(AWSErrorHandler):
        _CUSTOM_EXCEPTION = exception

        @classmethod
        def _is_missing(cls):
            return is_boto3_error_code(list(missing_codes))

    Handler.__name__ = Handler.__qualname__ = f"{exception.__name__}Handler"
    return Handler


AWSCallHandler = error_handler(TrainiumAWSError)


def fail_on_aws_error(module, action, *args, **kwargs):
    """Run ``action``; a TrainiumAWSError fails the module (``fail_json_aws`` with the error's message).

    Returns what ``action`` returns, None after a failure.
    """
    try:
        return action(*args, **kwargs)
    except TrainiumAWSError as e:
        module.fail_json_aws_error(e)
    return None


def warn(module, message):
    """Show ``message`` as a warning of the task.

    amazon.aws's ``AnsibleAWSModule.warn`` also passes its warnings to
    ``exit_json``, which ansible-core 2.19 reports with a deprecation warning
    on every such task; the AnsibleModule underneath shows them without it.
    """
    getattr(module, "_module", module).warn(message)


def all_items(client, operation, key, **params):
    """Every item under ``key`` of ``operation``'s answers, all pages read (one call where boto3 has no paginator for it)."""
    if client.can_paginate(operation):
        return client.get_paginator(operation).paginate(**params).build_full_result().get(key) or []
    return getattr(client, operation)(**params).get(key) or []


def error_code(error):
    """The code of a botocore ClientError, None for anything else."""
    if not isinstance(error, botocore.exceptions.ClientError):
        return None
    return error.response.get("Error", {}).get("Code")


def is_in_use_error(error):
    """A refusal because the resource is busy (``ResourceInUseException``)."""
    return error_code(error) == IN_USE_CODE


# IAM is eventually consistent: a role made moments ago may not be assumable yet by EKS (CreateCluster,
# CreateNodegroup, CreateAddon answer InvalidParameterException "... role ... cannot be assumed"; IAM User Guide,
# "Troubleshoot IAM": changes may take time to become visible). Such calls are tried again for a bounded time.
ROLE_NOT_ASSUMABLE = re.compile(r"(cannot|could not|can't|unable to) be assumed", re.IGNORECASE)
ROLE_PROPAGATION_SECONDS = 120


def is_role_propagation_error(error):
    """A refusal because a (new) IAM role cannot be assumed yet."""
    if error_code(error) != "InvalidParameterException":
        return False
    message = error.response.get("Error", {}).get("Message") or ""
    return "role" in message.lower() and bool(ROLE_NOT_ASSUMABLE.search(message))


# --------------------------------------------------------------------- tags


def tag_diff(current, desired, purge_tags=True):
    """(tags to set, keys to remove) that turn the tags ``current`` into ``desired``.

    ``desired`` None leaves the tags alone. Keys and values are compared as
    strings (AWS stores strings) and returned as strings. Without
    ``purge_tags`` tags that ``desired`` does not list stay; tags whose key
    starts with ``aws:`` are never removed. The keys to remove are sorted.
    """
    if desired is None:
        return {}, []
    current = {str(key): str(value) for key, value in (current or {}).items()}
    desired = {str(key): str(value) for key, value in desired.items()}
    to_set = {key: value for key, value in desired.items() if current.get(key) != value}
    to_remove = []
    if purge_tags:
        to_remove = sorted(key for key in current if key not in desired and not key.startswith(AWS_RESERVED_TAG_PREFIX))
    return to_set, to_remove


def tags_after(current, to_set, to_remove):
    """The tags ``current`` once ``to_remove`` are removed and ``to_set`` set (check mode, diffs)."""
    tags = {key: value for key, value in (current or {}).items() if key not in to_remove}
    tags.update(to_set)
    return tags


def tag_list(tags):
    """``tags`` ({key: value}, None for none) as AWS's list of {"Key", "Value"} strings, sorted by key."""
    return [{"Key": str(key), "Value": str(value)} for key, value in sorted((tags or {}).items())]


# service: (tag call, untag call, keyword arguments of each for a resource and the tags)
_TAG_CALLS = {
    "eks": ("tag_resource", "untag_resource",
            lambda arn, tags: {"resourceArn": arn, "tags": dict(tags)},
            lambda arn, keys: {"resourceArn": arn, "tagKeys": list(keys)}),
    "ecr": ("tag_resource", "untag_resource",
            lambda arn, tags: {"resourceArn": arn, "tags": tag_list(tags)},
            lambda arn, keys: {"resourceArn": arn, "tagKeys": sorted(keys)}),
    "fsx": ("tag_resource", "untag_resource",
            lambda arn, tags: {"ResourceARN": arn, "Tags": tag_list(tags)},
            lambda arn, keys: {"ResourceARN": arn, "TagKeys": list(keys)}),
    "ec2": ("create_tags", "delete_tags",
            lambda resource_id, tags: {"Resources": [resource_id], "Tags": tag_list(tags)},
            lambda resource_id, keys: {"Resources": [resource_id], "Tags": [{"Key": key} for key in keys]}),
}


@AWSCallHandler.common_error_handler("update the tags")
@AWSRetry.jittered_backoff()
def update_tags(client, resource, to_set, to_remove):
    """Remove the keys ``to_remove``, then set ``to_set``, on ``resource`` (an ARN; an ID for EC2).

    ``client`` is a boto3 client of EKS, ECR, FSx or EC2; each spells the call its own way.
    """
    tag_call, untag_call, tag_args, untag_args = _TAG_CALLS[client.meta.service_model.service_name]
    if to_remove:
        getattr(client, untag_call)(**untag_args(resource, to_remove))
    if to_set:
        getattr(client, tag_call)(**tag_args(resource, to_set))


def tags_and_wait_options(wait_timeout):
    """The argument spec of the options every resource module shares: tags, purge_tags, wait, wait_timeout."""
    return dict(
        tags=dict(type="dict", aliases=["resource_tags"]),
        purge_tags=dict(type="bool", default=True),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=wait_timeout),
    )


# ---------------------------------------------------------------- planners


def new_plan(errors=(), tags=({}, []), **changes):
    """The shape every planner returns.

    ``errors``: what cannot be done (each a message naming the option);
    ``tags_to_set`` (dict) and ``tags_to_remove`` (sorted list), as from
    ``tag_diff``; the planner's own changes (request payloads, None or empty
    when there is nothing to send); ``changed``: whether anything is to be
    done. The errors do not count as changes.
    """
    to_set, to_remove = tags
    plan = dict(changes, errors=list(errors), tags_to_set=dict(to_set), tags_to_remove=sorted(to_remove))
    plan["changed"] = bool(to_set or to_remove or any(changes.values()))
    return plan


# ------------------------------------------------------------ wait and retry


def wait_for(describe, done, timeout, subject, goal, delay=15, state_key="status", failure=None,
             error=TrainiumAWSError, clock=None, sleep=None, first_delay=None):
    """Call ``describe()`` every ``delay`` seconds until ``done(answer)``; return that answer.

    With ``first_delay``, the first pause is that long and each next one twice
    the last, up to ``delay``: a change of a few seconds is seen within about
    one, a long one polled every ``delay`` seconds as without it.
    ``describe`` returns the resource (a dict) or None when it does not exist.
    ``failure(answer)`` returns a message when the resource reached a state it
    will not leave; ``error(message=...)`` is raised with it. When
    ``timeout`` seconds pass first, ``error`` is raised naming ``subject``,
    ``goal`` and the last state (``answer[state_key]``, ``gone`` for None).
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    deadline = clock() + timeout
    pause = min(first_delay, delay) if first_delay else delay
    while True:
        answer = describe()
        if done(answer):
            return answer
        message = failure(answer) if failure else None
        if message:
            raise error(message=message)
        if clock() >= deadline:
            state = answer.get(state_key) if answer is not None else "gone"
            raise error(message=f"Timed out after {timeout} s waiting for {subject} {goal} (last state: {state})")
        sleep(pause)
        pause = min(pause * 2, delay)


def wait_for_status(describe, ready, timeout, subject, gone=False, failed=(), reason=None, state_key="status", **kwargs):
    """Poll until the resource's state is ``ready`` or, with ``gone``, until it no longer exists.

    A state in ``failed`` raises at once, with ``reason(answer)`` when given;
    so does a resource that disappears while it should become ``ready``.
    Returns the last answer (None when gone). ``kwargs`` go to ``wait_for``.
    """

    def done(answer):
        if gone:
            return answer is None
        return answer is not None and answer.get(state_key) == ready

    def failure(answer):
        if answer is None:
            return f"{subject} disappeared while waiting for it to become {ready}"
        state = answer.get(state_key)
        if state in failed:
            return f"{subject} is {state}: {reason(answer)}" if reason else f"{subject} is {state}"
        return None

    goal = "to be deleted" if gone else f"to become {ready}"
    return wait_for(describe, done, timeout, subject, goal, state_key=state_key, failure=failure, **kwargs)


def wait_until_settled(describe, busy_states, timeout, subject, state_key="status", **kwargs):
    """Poll while the resource is in one of ``busy_states`` (AWS refuses to delete it then).

    Returns the last answer, None when the resource is gone; any other state
    ends the wait. Raises on timeout naming the state. ``kwargs`` go to ``wait_for``.
    """
    return wait_for(
        describe, lambda answer: answer is None or answer.get(state_key) not in busy_states, timeout, subject,
        f"to finish {' or '.join(busy_states)} before deleting it (AWS refuses to delete it until then)",
        state_key=state_key, **kwargs,
    )


def retry_in_use(call, timeout, in_use=is_in_use_error, delay=5, max_delay=30, clock=None, sleep=None):
    """Run ``call()`` (throttling retried by AWSRetry) again while it fails with ``in_use(error)``.

    Sleeps ``delay`` seconds, doubling up to ``max_delay``, and gives up (the
    last error is raised) once ``timeout`` seconds have passed. Returns what
    ``call`` returns.
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    attempt = AWSRetry.jittered_backoff()(call)
    deadline = clock() + (timeout or 0)
    while True:
        try:
            return attempt()
        except botocore.exceptions.ClientError as e:
            remaining = deadline - clock()
            if not in_use(e) or remaining <= 0:
                raise
            sleep(min(delay, remaining))
            delay = min(delay * 2, max_delay)
