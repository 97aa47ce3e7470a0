# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""gather_capacity against a real boto3 EC2 client whose answers come from botocore's Stubber.

The client points at an endpoint nothing listens on; the Stubber answers every call
before a request would be sent and fails the test on any call it was not told about.
"""

from __future__ import annotations


import botocore.exceptions
import pytest
from botocore.stub import Stubber

from ansible_collections.amazon.aws.plugins.module_utils.exceptions import AnsibleAWSError
from ansible_collections.trainium.eks.plugins.module_utils import trainium_capacity
from ansible_collections.trainium.eks.plugins.module_utils.trainium_capacity import TrainiumCapacityError
from ansible_collections.trainium.eks.plugins.module_utils.trainium_capacity import gather_capacity

TRN = ["trn1.32xlarge", "trn1n.32xlarge"]
CR_BLOCK = "cr-0123456789abcdef0"
CR_ODCR = "cr-0fedcba9876543210"
ZONE_FILTER = {"Filters": [{"Name": "zone-type", "Values": ["availability-zone"]}]}


def _type_params(types_):
    return {"Filters": [{"Name": "instance-type", "Values": list(types_)}]}


def _offering_params(types_):
    return {"LocationType": "availability-zone", "Filters": [{"Name": "instance-type", "Values": list(types_)}]}


@pytest.fixture
def ec2(boto3_session, sleeps):  # pylint: disable=unused-argument,redefined-outer-name
    client = boto3_session.client("ec2", endpoint_url="http://127.0.0.1:1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _stub_types_offerings_zones(stubber, infos, offerings, zones, types_=None):
    types_ = types_ or TRN
    stubber.add_response("describe_instance_types", {"InstanceTypes": [i for i in infos if i["InstanceType"] in types_]}, _type_params(types_))
    stubber.add_response(
        "describe_instance_type_offerings", {"InstanceTypeOfferings": [o for o in offerings if o["InstanceType"] in types_]}, _offering_params(types_),
    )
    stubber.add_response("describe_availability_zones", {"AvailabilityZones": zones}, ZONE_FILTER)


def test_client_is_real_and_offline(ec2):
    client, _stubber = ec2
    assert client.meta.region_name == "us-west-2"
    assert client.meta.endpoint_url == "http://127.0.0.1:1"


def test_types_offerings_and_zones(ec2, ec2_instance_types, ec2_offerings, ec2_zones):
    client, stubber = ec2
    _stub_types_offerings_zones(stubber, ec2_instance_types, ec2_offerings, ec2_zones)
    facts = gather_capacity(client, TRN)
    assert sorted(facts["instance_types"]) == TRN
    trn1 = facts["instance_types"]["trn1.32xlarge"]
    assert (trn1["neuron_cores"], trn1["max_efa_interfaces"], trn1["network_cards"]) == (32, 8, 8)
    assert trn1["availability_zones"] == ["us-west-2b", "us-west-2d"]
    assert trn1["availability_zone_ids"] == ["usw2-az1", "usw2-az4"]
    assert facts["instance_types"]["trn1n.32xlarge"]["availability_zone_ids"] == ["usw2-az4"]
    assert [z["zone_name"] for z in facts["availability_zones"]] == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
    assert facts["capacity_reservations"] == []


def test_duplicate_types_are_asked_once(ec2, ec2_instance_types, ec2_offerings, ec2_zones):
    client, stubber = ec2
    _stub_types_offerings_zones(stubber, ec2_instance_types, ec2_offerings, ec2_zones)
    facts = gather_capacity(client, ["trn1.32xlarge", "trn1n.32xlarge", "trn1.32xlarge"])
    assert list(facts["instance_types"]) == TRN


def test_type_unknown_to_the_region(ec2, ec2_zones):
    client, stubber = ec2
    types_ = ["trn2.48xlarge"]
    stubber.add_response("describe_instance_types", {"InstanceTypes": []}, _type_params(types_))
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": []}, _offering_params(types_))
    stubber.add_response("describe_availability_zones", {"AvailabilityZones": ec2_zones}, ZONE_FILTER)
    entry = gather_capacity(client, types_)["instance_types"]["trn2.48xlarge"]
    assert entry == {"instance_type": "trn2.48xlarge", "known": False, "offered": False, "availability_zones": [], "availability_zone_ids": []}


def test_invalid_instance_type_error_means_unknown(ec2, ec2_zones):
    client, stubber = ec2
    types_ = ["trn9.huge"]
    stubber.add_client_error("describe_instance_types", "InvalidInstanceType", "The instance type 'trn9.huge' does not exist", 400, _type_params(types_))
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": []}, _offering_params(types_))
    stubber.add_response("describe_availability_zones", {"AvailabilityZones": ec2_zones}, ZONE_FILTER)
    entry = gather_capacity(client, types_)["instance_types"]["trn9.huge"]
    assert (entry["known"], entry["offered"]) == (False, False)


def test_pages_are_joined(ec2, ec2_instance_types, ec2_offerings, ec2_zones):
    client, stubber = ec2
    first = [o for o in ec2_offerings if o["InstanceType"] == "trn1.32xlarge"]
    rest = [o for o in ec2_offerings if o["InstanceType"] == "trn1n.32xlarge"]
    stubber.add_response("describe_instance_types", {"InstanceTypes": ec2_instance_types[:2]}, _type_params(TRN))
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": first, "NextToken": "page-2"}, _offering_params(TRN))
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": rest}, dict(_offering_params(TRN), NextToken="page-2"))
    stubber.add_response("describe_availability_zones", {"AvailabilityZones": ec2_zones}, ZONE_FILTER)
    facts = gather_capacity(client, TRN)
    assert facts["instance_types"]["trn1.32xlarge"]["availability_zones"] == ["us-west-2b", "us-west-2d"]
    assert facts["instance_types"]["trn1n.32xlarge"]["availability_zones"] == ["us-west-2d"]


def test_reservations_are_looked_up_one_by_one(ec2, ec2_instance_types, ec2_offerings, ec2_zones, ec2_reservations):
    client, stubber = ec2
    _stub_types_offerings_zones(stubber, ec2_instance_types, ec2_offerings, ec2_zones)
    stubber.add_response("describe_capacity_reservations", {"CapacityReservations": [ec2_reservations[0]]}, {"CapacityReservationIds": [CR_BLOCK]})
    stubber.add_client_error(
        "describe_capacity_reservations", "InvalidCapacityReservationId.NotFound", "The capacity reservation ID 'cr-0000000000000dead' does not exist",
        400, {"CapacityReservationIds": ["cr-0000000000000dead"]},
    )
    stubber.add_response("describe_capacity_reservations", {"CapacityReservations": [ec2_reservations[1]]}, {"CapacityReservationIds": [CR_ODCR]})
    facts = gather_capacity(client, TRN, reservation_ids=["cr-0123456789abcdef0", "cr-0000000000000dead", "cr-0fedcba9876543210", "cr-0123456789abcdef0"])
    reservations = facts["capacity_reservations"]
    assert [r["id"] for r in reservations] == ["cr-0123456789abcdef0", "cr-0fedcba9876543210"]
    assert reservations[0]["reservation_type"] == "capacity-block"
    assert reservations[0]["start_date"] == "2025-06-02 11:30:00+00:00"
    assert reservations[1]["total_instance_count"] == 2


def test_reservation_ids_win_over_lookup(ec2, ec2_instance_types, ec2_offerings, ec2_zones, ec2_reservations):
    client, stubber = ec2
    _stub_types_offerings_zones(stubber, ec2_instance_types, ec2_offerings, ec2_zones)
    stubber.add_response("describe_capacity_reservations", {"CapacityReservations": [ec2_reservations[0]]}, {"CapacityReservationIds": [CR_BLOCK]})
    facts = gather_capacity(client, TRN, reservation_ids=["cr-0123456789abcdef0"], lookup_reservations=True)
    assert [r["id"] for r in facts["capacity_reservations"]] == ["cr-0123456789abcdef0"]


def test_lookup_filters_on_type_and_usable_state(ec2, ec2_instance_types, ec2_offerings, ec2_zones, ec2_reservations):
    client, stubber = ec2
    _stub_types_offerings_zones(stubber, ec2_instance_types, ec2_offerings, ec2_zones)
    stubber.add_response("describe_capacity_reservations", {"CapacityReservations": ec2_reservations}, {
        "Filters": [
            {"Name": "instance-type", "Values": TRN},
            {"Name": "state", "Values": ["active", "scheduled"]},
        ],
    })
    facts = gather_capacity(client, TRN, reservation_ids=[], lookup_reservations=True)
    assert [r["id"] for r in facts["capacity_reservations"]] == ["cr-0123456789abcdef0", "cr-0fedcba9876543210"]


def test_throttling_is_retried(ec2, sleeps, ec2_instance_types, ec2_offerings, ec2_zones):
    client, stubber = ec2
    stubber.add_client_error("describe_instance_types", "RequestLimitExceeded", "Request limit exceeded.", 503, _type_params(TRN))
    stubber.add_client_error("describe_instance_types", "RequestLimitExceeded", "Request limit exceeded.", 503, _type_params(TRN))
    _stub_types_offerings_zones(stubber, ec2_instance_types, ec2_offerings, ec2_zones)
    facts = gather_capacity(client, TRN)
    assert facts["instance_types"]["trn1.32xlarge"]["known"] is True
    assert len(sleeps) == 2
    assert all(0 <= s <= 60 for s in sleeps)


def test_throttling_of_zones_is_retried(ec2, sleeps, ec2_instance_types, ec2_offerings, ec2_zones):
    client, stubber = ec2
    stubber.add_response("describe_instance_types", {"InstanceTypes": ec2_instance_types[:2]}, _type_params(TRN))
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": ec2_offerings}, _offering_params(TRN))
    stubber.add_client_error("describe_availability_zones", "Throttling", "Rate exceeded", 400, ZONE_FILTER)
    stubber.add_response("describe_availability_zones", {"AvailabilityZones": ec2_zones}, ZONE_FILTER)
    assert len(gather_capacity(client, TRN)["availability_zones"]) == 4
    assert len(sleeps) == 1


def test_throttling_gives_up_after_ten_tries(ec2, sleeps):
    client, stubber = ec2
    for _attempt in range(10):
        stubber.add_client_error("describe_instance_types", "RequestLimitExceeded", "Request limit exceeded.", 503, _type_params(TRN))
    with pytest.raises(TrainiumCapacityError) as raised:
        gather_capacity(client, TRN)
    assert raised.value.message == "Failed to describe instance types"
    assert len(sleeps) == 9


@pytest.mark.parametrize("code", ["UnauthorizedOperation", "AccessDenied"])
def test_permission_error_on_types(ec2, sleeps, code):
    client, stubber = ec2
    stubber.add_client_error("describe_instance_types", code, "You are not authorized to perform this operation.", 403, _type_params(TRN))
    with pytest.raises(TrainiumCapacityError) as raised:
        gather_capacity(client, TRN)
    assert isinstance(raised.value, AnsibleAWSError)
    assert raised.value.message == "Failed to describe instance types"
    assert isinstance(raised.value.exception, botocore.exceptions.ClientError)
    assert raised.value.exception.response["Error"]["Code"] == code
    assert sleeps == []


def test_permission_error_on_offerings(ec2, ec2_instance_types):
    client, stubber = ec2
    stubber.add_response("describe_instance_types", {"InstanceTypes": ec2_instance_types[:2]}, _type_params(TRN))
    stubber.add_client_error("describe_instance_type_offerings", "UnauthorizedOperation", "You are not authorized to perform this operation.", 403,
                             _offering_params(TRN))
    with pytest.raises(TrainiumCapacityError) as raised:
        gather_capacity(client, TRN)
    assert raised.value.message == "Failed to describe instance type offerings"


def test_permission_error_on_zones(ec2, ec2_instance_types, ec2_offerings):
    client, stubber = ec2
    stubber.add_response("describe_instance_types", {"InstanceTypes": ec2_instance_types[:2]}, _type_params(TRN))
    stubber.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": ec2_offerings}, _offering_params(TRN))
    stubber.add_client_error("describe_availability_zones", "UnauthorizedOperation", "You are not authorized to perform this operation.", 403, ZONE_FILTER)
    with pytest.raises(TrainiumCapacityError) as raised:
        gather_capacity(client, TRN)
    assert raised.value.message == "Failed to describe availability zones"


def test_permission_error_on_reservations(ec2, ec2_instance_types, ec2_offerings, ec2_zones):
    client, stubber = ec2
    _stub_types_offerings_zones(stubber, ec2_instance_types, ec2_offerings, ec2_zones)
    stubber.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", "You are not authorized to perform this operation.", 403,
                             {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
    with pytest.raises(TrainiumCapacityError) as raised:
        gather_capacity(client, TRN, reservation_ids=["cr-0123456789abcdef0"])
    assert raised.value.message == "Failed to describe capacity reservations"


def test_malformed_reservation_id_is_an_error(ec2, ec2_instance_types, ec2_offerings, ec2_zones):
    client, stubber = ec2
    _stub_types_offerings_zones(stubber, ec2_instance_types, ec2_offerings, ec2_zones)
    stubber.add_client_error("describe_capacity_reservations", "InvalidCapacityReservationId.Malformed", "Invalid id: 'cr-x'", 400,
                             {"CapacityReservationIds": ["cr-x"]})
    with pytest.raises(TrainiumCapacityError):
        gather_capacity(client, TRN, reservation_ids=["cr-x"])


def test_error_class_is_an_ansible_aws_error():
    assert issubclass(trainium_capacity.TrainiumCapacityError, AnsibleAWSError)
    assert trainium_capacity.CapacityErrorHandler._CUSTOM_EXCEPTION is TrainiumCapacityError  # pylint: disable=protected-access
