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
