# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ecr role against moto server: bad input fails before any call.

The role flow (check mode, converge, idempotence, an in-place change, absent with images) is owned by the Molecule scenario molecule/ecr.
"""

from __future__ import annotations

import pytest

PLAYBOOK = """
- name: ECR
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.ecr
"""


@pytest.fixture()
def ecr_playbook(tmp_path):
    path = tmp_path / "ecr.yml"
    path.write_text(PLAYBOOK)
    return str(path)


def repositories(aws):
    return sorted(r["repositoryName"] for r in aws.client("ecr").describe_repositories()["repositories"])


@pytest.mark.parametrize("variables, message", [
    ({"ecr_untagged_expire_days": 0}, "ecr_untagged_expire_days: got 0 (int); allowed: an integer from 1 to 3650"),
    ({"ecr_encryption_type": "KMS"}, "ecr_kms_key: got '' (str); allowed: the ARN of a KMS key (arn:aws:kms:...) with ecr_encryption_type KMS"),
    ({"ecr_repository_name": "Bert"}, "ecr_repository_name: got 'Bert' (str); allowed: 2-256 lowercase letters"),
])
def test_bad_input_fails_before_any_call(aws, run_playbook, ecr_playbook, variables, message):
    result = run_playbook(ecr_playbook, extra_vars=variables)
    assert result.rc != 0, result
    assert message in result.text
    assert repositories(aws) == []


def test_a_repository_someone_else_made_is_neither_taken_over_nor_deleted(aws, run_playbook, ecr_playbook, local_vars):
    ecr = aws.client("ecr")
    name = local_vars["trainium_image"]["repository"]
    theirs = ecr.create_repository(repositoryName=name, imageTagMutability="MUTABLE", tags=[{"Key": "team", "Value": "vision"}])["repository"]

    refused = run_playbook(ecr_playbook)
    assert refused.rc != 0, refused
    assert f"name: the ECR repository {name} exists without the tags trainium.eks/cluster={local_vars['trainium_cluster_name']}" in refused.text
    left = ecr.describe_repositories(repositoryNames=[name])["repositories"][0]
    assert left["imageTagMutability"] == "MUTABLE"
    assert ecr.list_tags_for_resource(resourceArn=theirs["repositoryArn"])["tags"] == [{"Key": "team", "Value": "vision"}]

    kept = run_playbook(ecr_playbook, extra_vars={"ecr_state": "absent"})
    assert kept.rc == 0 and kept.recap["changed"] == 0, kept
    assert "left in place: it lacks the tags trainium.eks/cluster=" in kept.text
    assert repositories(aws) == [name]

    adopted = run_playbook(ecr_playbook, extra_vars={"ecr_adopt_existing": True})
    assert adopted.rc == 0 and adopted.recap["changed"] == 1, adopted
    assert ecr.describe_repositories(repositoryNames=[name])["repositories"][0]["imageTagMutability"] == "IMMUTABLE"
    gone = run_playbook(ecr_playbook, extra_vars={"ecr_state": "absent"})
    assert gone.rc == 0 and repositories(aws) == []


def test_teardown_keeps_the_repository_when_told_and_refuses_what_it_cannot_keep(aws, run_playbook, ecr_playbook, local_vars):
    name = local_vars["trainium_image"]["repository"]
    assert run_playbook(ecr_playbook).rc == 0
    wrong = run_playbook("playbooks/teardown.yml", extra_vars={"trainium_teardown_keep": ["file_system"]})
    assert wrong.rc != 0 and "trainium_teardown_keep[0]: got 'file_system'" in wrong.text, wrong
    assert repositories(aws) == [name]

    kept = run_playbook("playbooks/teardown.yml", extra_vars={"trainium_teardown_keep": ["repository"]})
    assert kept.rc == 0, kept
    assert f"Kept the ECR repository {name} with its images" in kept.text
    assert repositories(aws) == [name]

    gone = run_playbook("playbooks/teardown.yml")
    assert gone.rc == 0, gone
    assert repositories(aws) == []
    # No deprecation notice from the collection's calls (iam_role is told about instance profiles).
    assert "DEPRECATION" not in kept.output + gone.output
