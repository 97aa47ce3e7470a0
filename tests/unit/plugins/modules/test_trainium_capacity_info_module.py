# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium_capacity_info run in-process, as ansible-core 2.19 would run it."""

from __future__ import annotations

import json

import pytest
from botocore.stub import Stubber

from ansible.module_utils.testing import patch_module_args
from ansible_collections.trainium.eks.plugins.module_utils.trainium_facts import build_capacity_facts
from ansible_collections.trainium.eks.plugins.modules import trainium_capacity_info


CONNECTION = {
    "region": "us-west-2",
    "access_key": "AKIAIOSFODNN7EXAMPLE",
    "secret_key": "not-a-real-secret",
    "endpoint_url": "http://127.0.0.1:1",
}
TRN = ["trn1.32xlarge", "trn1n.32xlarge"]


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch):
    """Keep the developer's AWS settings (profile, region, keys) out of the module."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL", "AWS_URL", "EC2_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)


def _run(capsys, args):
    """Run main() with ``args``; return (exit code, parsed JSON result)."""
    capsys.readouterr()
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exited:
            trainium_capacity_info.main()
    out = capsys.readouterr().out
    return exited.value.code, json.loads(out)


@pytest.fixture
def facts(ec2_instance_types, ec2_offerings, ec2_zones, ec2_reservations):
    return build_capacity_facts(TRN, ec2_instance_types, ec2_offerings, ec2_zones, ec2_reservations[:1])


@pytest.fixture
def gather(monkeypatch, facts):
    calls = []

    def fake_gather(client, instance_types, reservation_ids=None, lookup_reservations=False, regional_client=None):
        assert callable(regional_client)
        calls.append({"client": client, "instance_types": instance_types, "reservation_ids": reservation_ids, "lookup_reservations": lookup_reservations})
        return facts

    monkeypatch.setattr(trainium_capacity_info, "gather_capacity", fake_gather)
    return calls


def test_reports_facts_and_changes_nothing(capsys, gather, facts):
    rc, result = _run(capsys, dict(CONNECTION, instance_types=TRN))
    assert rc == 0
    assert result["changed"] is False
    assert "failed" not in result
    assert result["instance_types"] == facts["instance_types"]
    assert result["availability_zones"] == facts["availability_zones"]
    assert [r["id"] for r in result["capacity_reservations"]] == ["cr-0123456789abcdef0"]
    (call,) = gather
    assert call["instance_types"] == TRN
    assert call["reservation_ids"] == []
    assert call["lookup_reservations"] is False


def test_client_uses_the_connection_options(capsys, gather):
    rc, _result = _run(capsys, dict(CONNECTION, instance_types=TRN))
    assert rc == 0
    client = gather[0]["client"]
    assert client.meta.service_model.service_name == "ec2"
    assert client.meta.region_name == "us-west-2"
    assert client.meta.endpoint_url == "http://127.0.0.1:1"


def test_reservation_options_are_passed_on(capsys, gather):
    args = dict(CONNECTION, instance_types=["trn2.48xlarge"], capacity_reservation_ids=["cr-0123456789abcdef0"], lookup_capacity_reservations=True)
    rc, _result = _run(capsys, args)
    assert rc == 0
    assert gather[0]["instance_types"] == ["trn2.48xlarge"]
    assert gather[0]["reservation_ids"] == ["cr-0123456789abcdef0"]
    assert gather[0]["lookup_reservations"] is True


def test_check_mode_gives_the_same_result(capsys, gather):
    rc, normal = _run(capsys, dict(CONNECTION, instance_types=TRN))
    rc_check, checked = _run(capsys, dict(CONNECTION, instance_types=TRN, _ansible_check_mode=True))
    assert rc == rc_check == 0
    assert checked["changed"] is False
    for key in ("instance_types", "availability_zones", "capacity_reservations"):
        assert checked[key] == normal[key]
    assert len(gather) == 2


def test_empty_instance_types_fails(capsys, gather):
    rc, result = _run(capsys, dict(CONNECTION, instance_types=[]))
    assert rc == 1
    assert result["failed"] is True
    assert result["msg"].startswith("instance_types: got an empty list; allowed: ")
    assert gather == []


def test_missing_instance_types_fails(capsys, gather):
    rc, result = _run(capsys, dict(CONNECTION))
    assert rc == 1
    assert result["failed"] is True
    assert "instance_types" in result["msg"]
    assert gather == []


def test_unknown_option_fails(capsys, gather):
    rc, result = _run(capsys, dict(CONNECTION, instance_types=TRN, zones=["us-west-2d"]))
    assert rc == 1
    assert "zones" in result["msg"]
    assert gather == []


@pytest.fixture
def stubbed_client(monkeypatch):
    """Let module.client() build the real client, then answer its calls with a Stubber."""
    holder = {}
    real_client = trainium_capacity_info.AnsibleAWSModule.client

    def client(module, service, retry_decorator=None, **extra):
        conn = real_client(module, service, retry_decorator=retry_decorator, **extra)
        stubber = holder["stubber"] = Stubber(conn)
        for method, kind, payload, params in holder["plan"]:
            if kind == "error":
                stubber.add_client_error(method, payload, "You are not authorized to perform this operation.", 403, params)
            else:
                stubber.add_response(method, payload, params)
        stubber.activate()
        return conn

    monkeypatch.setattr(trainium_capacity_info.AnsibleAWSModule, "client", client)
    yield holder
    if "stubber" in holder:
        holder["stubber"].deactivate()


def _filters(types_):
    return [{"Name": "instance-type", "Values": types_}]


def test_end_to_end_with_stubbed_ec2(capsys, stubbed_client, ec2_instance_types, ec2_offerings, ec2_zones, ec2_reservations):
    stubbed_client["plan"] = [
        ("describe_instance_types", "ok", {"InstanceTypes": ec2_instance_types[:2]}, {"Filters": _filters(TRN)}),
        ("describe_instance_type_offerings", "ok", {"InstanceTypeOfferings": ec2_offerings},
         {"LocationType": "availability-zone", "Filters": _filters(TRN)}),
        ("describe_availability_zones", "ok", {"AvailabilityZones": ec2_zones}, {"Filters": [{"Name": "zone-type", "Values": ["availability-zone"]}]}),
        ("describe_capacity_reservations", "ok", {"CapacityReservations": ec2_reservations},
         {"Filters": _filters(TRN) + [{"Name": "state", "Values": ["active", "scheduled"]}]}),
    ]
    rc, result = _run(capsys, dict(CONNECTION, instance_types=TRN, lookup_capacity_reservations=True))
    assert rc == 0, result
    stubbed_client["stubber"].assert_no_pending_responses()
    assert result["changed"] is False
    trn1 = result["instance_types"]["trn1.32xlarge"]
    assert trn1["availability_zones"] == ["us-west-2b", "us-west-2d"]
    assert trn1["availability_zone_ids"] == ["usw2-az1", "usw2-az4"]
    assert trn1["neuron_cores"] == 32
    assert result["instance_types"]["trn1n.32xlarge"]["max_efa_interfaces"] == 16
    assert [r["id"] for r in result["capacity_reservations"]] == ["cr-0123456789abcdef0", "cr-0fedcba9876543210"]
    assert result["capacity_reservations"][0]["end_date"] == "2025-06-16 11:30:00+00:00"


def test_aws_error_fails_with_its_code(capsys, stubbed_client):
    stubbed_client["plan"] = [("describe_instance_types", "error", "UnauthorizedOperation", {"Filters": _filters(TRN)})]
    rc, result = _run(capsys, dict(CONNECTION, instance_types=TRN))
    assert rc == 1
    assert result["failed"] is True
    assert result["msg"].startswith("Failed to describe instance types: ")
    assert "UnauthorizedOperation" in result["msg"]
    assert result["error"]["code"] == "UnauthorizedOperation"
    assert "boto3_version" in result
