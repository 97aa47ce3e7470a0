# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Eventual consistency: CreateNodegroup and CreateAddon are tried again, for a bounded time, while EKS cannot assume
a role made moments ago (the cluster create already was); any other refusal, or the same one past the bound, is raised."""

from __future__ import annotations

import botocore.exceptions
import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks_addon as addon
from ansible_collections.trainium.eks.plugins.module_utils import trainium_nodegroup as ng

NOT_YET = "Role arn:aws:iam::123456789012:role/trn-bert-node cannot be assumed by EKS"


def _error(code, message):
    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": message}}, "Create")


class FlakyClient:
    """Refuses ``refusals`` times with ``error``, then answers."""

    def __init__(self, refusals, error):
        self.refusals, self.error, self.calls = refusals, error, 0

    def _answer(self, key):
        self.calls += 1
        if self.calls <= self.refusals:
            raise self.error
        return {key: {"status": "CREATING"}}

    def create_nodegroup(self, **request):
        return self._answer("nodegroup")

    def create_addon(self, **request):
        return self._answer("addon")


CALLS = [(ng.create_nodegroup, "nodegroup"), (addon.create_addon, "addon")]


@pytest.mark.parametrize("create, key", CALLS)
def test_a_role_not_assumable_yet_is_tried_again_until_it_is(create, key, fake_clock):
    client, clock = FlakyClient(3, _error("InvalidParameterException", NOT_YET)), fake_clock
    assert create(client, {}, clock=clock, sleep=clock.sleep) == {"status": "CREATING"}
    assert client.calls == 4 and 0 < clock.now < common.ROLE_PROPAGATION_SECONDS


@pytest.mark.parametrize("create, key", CALLS)
def test_other_refusals_and_a_role_that_never_becomes_assumable_are_raised(create, key, fake_clock):
    client, clock = FlakyClient(1, _error("InvalidParameterException", "Subnet subnet-1 does not exist")), fake_clock
    with pytest.raises(Exception) as raised:
        create(client, {}, clock=clock, sleep=clock.sleep)
    assert client.calls == 1 and "does not exist" in str(raised.value)
    client, clock = FlakyClient(1000, _error("InvalidParameterException", NOT_YET)), type(fake_clock)()
    with pytest.raises(Exception):
        create(client, {}, clock=clock, sleep=clock.sleep)
    assert 1 < client.calls < 20 and clock.now >= common.ROLE_PROPAGATION_SECONDS


def test_the_message_shapes_eks_uses():
    assert common.is_role_propagation_error(_error("InvalidParameterException", NOT_YET))
    assert common.is_role_propagation_error(_error("InvalidParameterException", "The role with name x could not be assumed"))
    assert not common.is_role_propagation_error(_error("AccessDeniedException", NOT_YET))
    assert not common.is_role_propagation_error(_error("InvalidParameterException", "The instance type cannot be assumed to support EFA"))
