# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Trainium vCPU quotas: reading them, what others use, and the refusal with the numbers."""

from __future__ import annotations

from unittest import mock

import botocore.exceptions

from ansible_collections.trainium.eks.plugins.module_utils import trainium_capacity as capacity
from ansible_collections.trainium.eks.plugins.module_utils import trainium_deployment as td

CAPACITY = {"instance_types": {"trn1.32xlarge": {"vcpus": 128}, "trn1.2xlarge": {"vcpus": 8}}}


def _quotas(on_demand=512, spot=0, used=0):
    return {"ON_DEMAND": {"code": "L-2C3B7624", "name": "Running On-Demand Trn instances", "value": on_demand, "used_by_others": used},
            "SPOT": {"code": "L-S", "name": "All Trn Spot Instance Requests", "value": spot, "used_by_others": 0}}


def _pool(count=2, itype="trn1.32xlarge", **extra):
    return dict({"name": "trn1", "instance_type": itype, "count": count, "capacity_type": "ON_DEMAND"}, **extra)


def test_within_the_quota_nothing_is_said():
    assert td.quota_errors([_pool(4)], dict(CAPACITY, vcpu_quotas=_quotas()), "us-west-2") == []


def test_over_the_quota_names_the_numbers_and_the_request():
    (line,) = td.quota_errors([_pool(3), _pool(4, "trn1.2xlarge", name="small")], dict(CAPACITY, vcpu_quotas=_quotas(used=128)), "us-west-2")
    assert line.startswith("trainium_node_pools: got 3 x trn1.32xlarge + 4 x trn1.2xlarge ON_DEMAND = 416 vCPUs; allowed: at most 384 vCPUs")
    assert "of 512 vCPUs in us-west-2 minus 128 used by other Trainium instances" in line
    assert line.endswith("--quota-code L-2C3B7624 --desired-value 544 --region us-west-2")


def test_reserved_parked_and_unreadable_are_not_counted():
    quotas = _quotas(on_demand=0)
    pools = [_pool(2, capacity_reservation_id="cr-1"), _pool(0), _pool(2, capacity_type="CAPACITY_BLOCK", capacity_reservation_id="cr-2")]
    assert td.quota_errors(pools, dict(CAPACITY, vcpu_quotas=quotas), "us-west-2") == []
    assert td.quota_errors([_pool(9)], dict(CAPACITY, vcpu_quotas={"ON_DEMAND": None, "SPOT": None}), "us-west-2") == []
    assert td.quota_errors([_pool(9)], CAPACITY, "us-west-2") == []


def test_spot_pools_count_against_the_spot_quota():
    (line,) = td.quota_errors([_pool(1, capacity_type="SPOT")], dict(CAPACITY, vcpu_quotas=_quotas()), "us-west-2")
    assert "got 1 x trn1.32xlarge SPOT = 128 vCPUs; allowed: at most 0 vCPUs, the EC2 quota 'All Trn Spot Instance Requests'" in line


def test_vcpus_in_use_leave_out_the_clusters_own_nodes():
    instances = [
        {"InstanceType": "trn1.32xlarge", "CpuOptions": {"CoreCount": 64, "ThreadsPerCore": 2}, "Tags": [{"Key": "eks:cluster-name", "Value": "mine"}]},
        {"InstanceType": "trn1.32xlarge", "CpuOptions": {"CoreCount": 64, "ThreadsPerCore": 2}},
        {"InstanceType": "trn1.2xlarge", "InstanceLifecycle": "spot"},
    ]
    assert capacity.trn_vcpus_in_use(instances, "mine", {"trn1.2xlarge": 8}) == {"ON_DEMAND": 128, "SPOT": 8}


def _error(code):
    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": code}}, "ListServiceQuotas")


def test_quotas_are_found_by_name_with_the_on_demand_code_as_fallback():
    client = mock.MagicMock()
    client.get_paginator.return_value.paginate.return_value.build_full_result.return_value = {"Quotas": [
        {"QuotaName": "All Trn Spot Instance Requests", "QuotaCode": "L-X", "Value": 64.0}]}
    client.get_service_quota.return_value = {"Quota": {"QuotaName": "Running On-Demand Trn instances", "QuotaCode": "L-2C3B7624", "Value": 256.0}}
    found = capacity.trn_quotas(client)
    assert found == {"ON_DEMAND": {"code": "L-2C3B7624", "name": "Running On-Demand Trn instances", "value": 256},
                     "SPOT": {"code": "L-X", "name": "All Trn Spot Instance Requests", "value": 64}}
    client.get_service_quota.assert_called_once_with(ServiceCode="ec2", QuotaCode="L-2C3B7624")


def test_unreadable_quotas_are_none():
    client = mock.MagicMock()
    client.get_paginator.return_value.paginate.return_value.build_full_result.side_effect = _error("AccessDeniedException")
    client.get_service_quota.side_effect = _error("AccessDeniedException")
    assert capacity.trn_quotas(client) == {"ON_DEMAND": None, "SPOT": None}
