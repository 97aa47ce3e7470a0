# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Shared set-up of the trainium.eks unit tests.

The code under test is imported as
``ansible_collections.trainium.eks.plugins...``. In a checkout,
``.collections/ansible_collections/trainium/eks`` links back to the repository
root (``make setup`` creates it), so putting ``.collections`` at the front of
``sys.path`` makes those imports work; ``ansible_collections`` is a namespace
package, so amazon.aws from the virtualenv is still found. Under
``ansible-test units`` the collection already sits in an
``ansible_collections`` tree and the link is absent, which is fine.

The fixtures return fresh copies of EC2 answers shaped like the real
DescribeInstanceTypes, DescribeInstanceTypeOfferings,
DescribeAvailabilityZones and DescribeCapacityReservations responses for
us-west-2, so each test may change them freely.
"""

from __future__ import annotations

import copy
import datetime
import sys
import types
from pathlib import Path

import boto3
import pytest

_COLLECTIONS = Path(__file__).resolve().parents[2] / ".collections"
if _COLLECTIONS.is_dir() and str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))

from ansible_collections.amazon.aws.plugins.module_utils import cloud  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def sleeps(monkeypatch):
    """Record AWSRetry's back-off sleeps instead of sleeping."""
    recorded = []
    monkeypatch.setattr(cloud, "time", types.SimpleNamespace(sleep=recorded.append))
    return recorded


class FakeClock:
    """A monotonic clock that moves only when the code under test sleeps (pass ``clock=c, sleep=c.sleep``)."""

    def __init__(self):
        self.now = 0.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def fake_clock():
    return FakeClock()


@pytest.fixture(scope="module")
def boto3_session():
    """One fake-credential session per test module: it caches service models, so each client is cheap."""
    return boto3.session.Session(aws_access_key_id="AKIAIOSFODNN7EXAMPLE", aws_secret_access_key="not-a-real-secret", region_name="us-west-2")


def _trainium_type(name, device_name, devices, cores_per_device, core_version, device_mib, vcpus, memory_mib, network):
    return {
        "InstanceType": name,
        "CurrentGeneration": True,
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": memory_mib},
        "NetworkInfo": network,
        "NeuronInfo": {
            "NeuronDevices": [
                {
                    "Count": devices,
                    "Name": device_name,
                    "CoreInfo": {"Count": cores_per_device, "Version": core_version},
                    "MemoryInfo": {"SizeInMiB": device_mib},
                }
            ],
            "TotalNeuronDeviceMemoryInMiB": devices * device_mib,
        },
    }


def _efa_network(performance, cards, efa, interfaces):
    return {
        "NetworkPerformance": performance,
        "MaximumNetworkInterfaces": interfaces,
        "MaximumNetworkCards": cards,
        "DefaultNetworkCardIndex": 0,
        "EnaSupport": "required",
        "EfaSupported": True,
        "EfaInfo": {"MaximumEfaInterfaces": efa},
        "Ipv4AddressesPerInterface": 50,
    }


EC2_INSTANCE_TYPES = [
    _trainium_type("trn1.32xlarge", "Trainium", 16, 2, 2, 32768, 128, 524288, _efa_network("8x 100 Gigabit", 8, 8, 40)),
    _trainium_type("trn1n.32xlarge", "Trainium", 16, 2, 2, 32768, 128, 524288, _efa_network("16x 100 Gigabit", 16, 16, 80)),
    _trainium_type("trn2.48xlarge", "Trainium2", 16, 8, 3, 98304, 192, 2097152, _efa_network("3200 Gigabit", 16, 16, 32)),
    _trainium_type(
        "trn1.2xlarge", "Trainium", 1, 2, 2, 32768, 8, 32768,
        {"NetworkPerformance": "Up to 12.5 Gigabit", "MaximumNetworkInterfaces": 4, "MaximumNetworkCards": 1, "EnaSupport": "required", "EfaSupported": False},
    ),
]

# Deliberately not sorted by zone: the parser must sort.
EC2_OFFERINGS = [
    {"InstanceType": "trn1.32xlarge", "LocationType": "availability-zone", "Location": "us-west-2d"},
    {"InstanceType": "trn1.32xlarge", "LocationType": "availability-zone", "Location": "us-west-2b"},
    {"InstanceType": "trn1n.32xlarge", "LocationType": "availability-zone", "Location": "us-west-2d"},
    {"InstanceType": "trn1.2xlarge", "LocationType": "availability-zone", "Location": "us-west-2d"},
    {"InstanceType": "trn1.2xlarge", "LocationType": "availability-zone", "Location": "us-west-2b"},
]


def _zone(name, zone_id, zone_type="availability-zone", state="available"):
    return {
        "OptInStatus": "opt-in-not-required",
        "RegionName": "us-west-2",
        "ZoneName": name,
        "ZoneId": zone_id,
        "GroupName": "us-west-2",
        "NetworkBorderGroup": "us-west-2",
        "ZoneType": zone_type,
        "State": state,
    }


# Zone names map to different zone ids in every account; these are one such mapping.
EC2_ZONES = [
    _zone("us-west-2d", "usw2-az4"),
    _zone("us-west-2a", "usw2-az2"),
    _zone("us-west-2b", "usw2-az1"),
    _zone("us-west-2c", "usw2-az3"),
]

EC2_LOCAL_ZONE = _zone("us-west-2-lax-1a", "usw2-lax1-az1", zone_type="local-zone", state="available")

EC2_RESERVATIONS = [
    {
        "CapacityReservationId": "cr-0123456789abcdef0",
        "OwnerId": "123456789012",
        "InstanceType": "trn1.32xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-west-2d",
        "AvailabilityZoneId": "usw2-az4",
        "Tenancy": "default",
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": 4,
        "EbsOptimized": True,
        "State": "active",
        "StartDate": datetime.datetime(2025, 6, 2, 11, 30, tzinfo=datetime.timezone.utc),
        "EndDate": datetime.datetime(2025, 6, 16, 11, 30, tzinfo=datetime.timezone.utc),
        "EndDateType": "limited",
        "InstanceMatchCriteria": "targeted",
        "ReservationType": "capacity-block",
    },
    {
        "CapacityReservationId": "cr-0fedcba9876543210",
        "OwnerId": "123456789012",
        "InstanceType": "trn1n.32xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-west-2d",
        "AvailabilityZoneId": "usw2-az4",
        "Tenancy": "default",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 1,
        "EbsOptimized": True,
        "State": "active",
        "EndDateType": "unlimited",
        "InstanceMatchCriteria": "open",
    },
]


@pytest.fixture
def ec2_instance_types():
    return copy.deepcopy(EC2_INSTANCE_TYPES)


@pytest.fixture
def ec2_offerings():
    return copy.deepcopy(EC2_OFFERINGS)


@pytest.fixture
def ec2_zones():
    return copy.deepcopy(EC2_ZONES)


@pytest.fixture
def ec2_local_zone():
    return copy.deepcopy(EC2_LOCAL_ZONE)


@pytest.fixture
def ec2_reservations():
    return copy.deepcopy(EC2_RESERVATIONS)
