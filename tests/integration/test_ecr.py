# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ecr role against moto server: check mode, create, idempotence, tags, absent with images."""

from __future__ import annotations

import json

import pytest

REPOSITORY = "bert-pretrain-neuron"
PLAYBOOK = """
- name: ECR
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.ecr
  post_tasks:
    - name: Print the ECR facts
      ansible.builtin.debug:
        msg: "ECR_FACTS {{ ecr_facts | to_json }}"
"""


@pytest.fixture()
def ecr_playbook(tmp_path):
    path = tmp_path / "ecr.yml"
    path.write_text(PLAYBOOK)
    return str(path)


def repositories(aws):
    return sorted(r["repositoryName"] for r in aws.client("ecr").describe_repositories()["repositories"])


def test_check_mode_on_an_empty_account_creates_nothing(aws, run_playbook, ecr_playbook):
    result = run_playbook(ecr_playbook, args=("--check",))
    assert result.rc == 0, result
    assert result.recap["changed"] == 1
    assert f"Would create the ECR repository {REPOSITORY} (AES256, scan on push, immutable tags)" in result.text
    assert '"repository_uri": null' in result.text
    assert repositories(aws) == []


def test_create_idempotent_then_absent_with_images(aws, run_playbook, ecr_playbook):
    everything = aws.resources()
    ecr = aws.client("ecr")
    created = run_playbook(ecr_playbook)
    assert created.rc == 0, created
    (repo,) = ecr.describe_repositories()["repositories"]
    assert repo["repositoryName"] == REPOSITORY
    assert repo["imageTagMutability"] == "IMMUTABLE"
    assert repo["imageScanningConfiguration"] == {"scanOnPush": True}
    assert repo["encryptionConfiguration"]["encryptionType"] == "AES256"
    rules = sorted(json.loads(ecr.get_lifecycle_policy(repositoryName=REPOSITORY)["lifecyclePolicyText"])["rules"],
                   key=lambda rule: rule["rulePriority"])
    assert [rule["selection"] for rule in rules] == [
        {"tagStatus": "untagged", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 7},
        {"tagStatus": "tagged", "tagPatternList": ["*"], "countType": "imageCountMoreThan", "countNumber": 50},
    ]
    tags = {t["Key"]: t["Value"] for t in ecr.list_tags_for_resource(resourceArn=repo["repositoryArn"])["tags"]}
    assert tags["trainium.eks/cluster"] == "trn-rehearsal"
    assert tags["ManagedBy"] == "trainium.eks"
    assert tags["Name"] == REPOSITORY
    facts = created.text.split("ECR_FACTS ", 1)[1]
    for key, value in (("repository_name", REPOSITORY), ("repository_uri", repo["repositoryUri"]),
                       ("repository_arn", repo["repositoryArn"]), ("registry_id", repo["registryId"])):
        assert f'"{key}": "{value}"' in facts

    # A second plain run changing nothing is Molecule's idempotence step (molecule/ecr).
    again = run_playbook(ecr_playbook, args=("--check", "--diff"))
    assert again.rc == 0, again
    assert again.recap["changed"] == 0

    # A changed setting is applied in place.
    changed = run_playbook(ecr_playbook, extra_vars={"ecr_keep_images": 20, "trainium_tags": {"team": "ml"}})
    assert changed.rc == 0, changed
    assert changed.recap["changed"] == 2
    rules = json.loads(ecr.get_lifecycle_policy(repositoryName=REPOSITORY)["lifecyclePolicyText"])["rules"]
    assert 20 in [rule["selection"]["countNumber"] for rule in rules]
    assert {"Key": "team", "Value": "ml"} in ecr.list_tags_for_resource(resourceArn=repo["repositoryArn"])["tags"]

    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 2,
                                      "digest": "sha256:" + "a" * 64}, "layers": []})
    ecr.put_image(repositoryName=REPOSITORY, imageManifest=manifest, imageTag="0.1.0")
    assert ecr.list_images(repositoryName=REPOSITORY)["imageIds"]

    removed = run_playbook(ecr_playbook, extra_vars={"ecr_state": "absent"})
    assert removed.rc == 0, removed
    assert removed.recap["changed"] == 1
    assert repositories(aws) == []
    assert aws.resources() == everything

    twice = run_playbook(ecr_playbook, extra_vars={"ecr_state": "absent"})
    assert twice.rc == 0, twice
    assert twice.recap["changed"] == 0


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
