# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A type the region does not offer: the regions that do, and the message that names them."""

from __future__ import annotations

from unittest import mock

from ansible_collections.trainium.eks.plugins.module_utils import trainium_capacity as capacity
from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td


def _client(offered_types):
    client = mock.MagicMock()
    client.describe_regions.return_value = {"Regions": [{"RegionName": r} for r in ("us-west-2", "eu-west-3", "us-east-1")]}
    paginator = client.get_paginator.return_value
    paginator.paginate.return_value.build_full_result.return_value = {
        "InstanceTypeOfferings": [{"InstanceType": t, "Location": "z"} for t in offered_types]}
    return client


def test_regions_offering_asks_every_region_once():
    by_region = {"us-west-2": _client(["trn2.48xlarge"]), "eu-west-3": _client([]), "us-east-1": _client(["trn2.48xlarge", "trn2.48xlarge"])}
    found = capacity.regions_offering(by_region["us-west-2"], by_region.__getitem__, ["trn2.48xlarge", "trn1.2xlarge"])
    assert found == {"trn2.48xlarge": ["us-east-1", "us-west-2"], "trn1.2xlarge": []}
    for client in by_region.values():
        assert client.get_paginator.return_value.paginate.call_count == 1


def _placement_error(offered_in):
    errors = td.Problems()
    info = {"offered": False, "availability_zones": [], "availability_zone_ids": []}
    if offered_in is not None:
        info["offered_in"] = offered_in
    pool = {"name": "trn1", "instance_type": "trn2.48xlarge", "count": 1}
    td._place_pool(errors, 0, pool, {"instance_types": {"trn2.48xlarge": info}}, "eu-west-3", [])
    (line,) = list(errors)
    return line


def test_the_message_names_the_regions_that_offer_the_type():
    assert _placement_error(["us-east-1", "us-west-2"]).endswith(
        "no zone of eu-west-3 offers trn2.48xlarge; it is offered in us-east-1, us-west-2 (set trainium_region to one of them)")
    assert _placement_error([]).endswith("no zone of eu-west-3 offers trn2.48xlarge; no region offers it")
    assert _placement_error(None).endswith("no zone of eu-west-3 offers trn2.48xlarge")
