# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.trainium.eks.plugins.module_utils import trainium_facts


def _by_type(infos, name):
    return next(info for info in infos if info["InstanceType"] == name)


def test_summarize_trn1_32xlarge(ec2_instance_types):
    assert trainium_facts.summarize_instance_type(_by_type(ec2_instance_types, "trn1.32xlarge")) == {
        "instance_type": "trn1.32xlarge",
        "neuron_device_name": "Trainium",
        "neuron_devices": 16,
        "neuron_cores": 32,
        "neuron_cores_per_device": 2,
        "neuron_device_memory_mib": 524288,
        "efa_supported": True,
        "max_efa_interfaces": 8,
        "network_cards": 8,
        "max_network_interfaces": 40,
        "ipv4_addresses_per_interface": 50,
        "vcpus": 128,
        "memory_mib": 524288,
    }


def test_summarize_trn1n_32xlarge(ec2_instance_types):
    facts = trainium_facts.summarize_instance_type(_by_type(ec2_instance_types, "trn1n.32xlarge"))
    assert facts["neuron_cores"] == 32
    assert facts["max_efa_interfaces"] == 16
    assert facts["network_cards"] == 16
    assert facts["max_network_interfaces"] == 80
    assert facts["efa_supported"] is True


def test_summarize_trn2_48xlarge(ec2_instance_types):
    facts = trainium_facts.summarize_instance_type(_by_type(ec2_instance_types, "trn2.48xlarge"))
    assert facts["neuron_device_name"] == "Trainium2"
    assert facts["neuron_devices"] == 16
    assert facts["neuron_cores_per_device"] == 8
    assert facts["neuron_cores"] == 128
    assert facts["neuron_device_memory_mib"] == 16 * 98304
    assert facts["vcpus"] == 192
    assert facts["memory_mib"] == 2097152


def test_summarize_trn1_2xlarge_has_no_efa(ec2_instance_types):
    facts = trainium_facts.summarize_instance_type(_by_type(ec2_instance_types, "trn1.2xlarge"))
    assert facts["neuron_devices"] == 1
    assert facts["neuron_cores"] == 2
    assert facts["neuron_device_memory_mib"] == 32768
    assert facts["efa_supported"] is False
    assert facts["max_efa_interfaces"] == 0
    assert facts["network_cards"] == 1
    assert facts["vcpus"] == 8


def test_device_memory_falls_back_to_per_device_sizes(ec2_instance_types):
    info = _by_type(ec2_instance_types, "trn1.32xlarge")
    del info["NeuronInfo"]["TotalNeuronDeviceMemoryInMiB"]
    assert trainium_facts.summarize_instance_type(info)["neuron_device_memory_mib"] == 16 * 32768


def test_summarize_type_without_neuron_devices():
    facts = trainium_facts.summarize_instance_type({"InstanceType": "m7i.large", "VCpuInfo": {"DefaultVCpus": 2}, "MemoryInfo": {"SizeInMiB": 8192}})
    assert facts["neuron_device_name"] is None
    assert (facts["neuron_devices"], facts["neuron_cores"], facts["neuron_cores_per_device"], facts["neuron_device_memory_mib"]) == (0, 0, 0, 0)
    assert facts["efa_supported"] is False
    assert facts["network_cards"] == 1
    assert facts["vcpus"] == 2


def test_zone_index_keeps_only_availability_zones(ec2_zones, ec2_local_zone):
    index = trainium_facts.zone_index(ec2_zones + [ec2_local_zone])
    assert index == {"us-west-2a": "usw2-az2", "us-west-2b": "usw2-az1", "us-west-2c": "usw2-az3", "us-west-2d": "usw2-az4"}


def test_zone_index_treats_missing_zone_type_as_availability_zone():
    assert trainium_facts.zone_index([{"ZoneName": "us-east-2a", "ZoneId": "use2-az1"}]) == {"us-east-2a": "use2-az1"}


def test_offered_zones_groups_sorts_and_maps_ids(ec2_offerings, ec2_zones):
    grouped = trainium_facts.offered_zones(ec2_offerings, trainium_facts.zone_index(ec2_zones))
    assert grouped == {
        "trn1.32xlarge": [{"name": "us-west-2b", "id": "usw2-az1"}, {"name": "us-west-2d", "id": "usw2-az4"}],
        "trn1n.32xlarge": [{"name": "us-west-2d", "id": "usw2-az4"}],
        "trn1.2xlarge": [{"name": "us-west-2b", "id": "usw2-az1"}, {"name": "us-west-2d", "id": "usw2-az4"}],
    }


def test_offered_zones_drops_duplicate_offerings(ec2_offerings, ec2_zones):
    grouped = trainium_facts.offered_zones(ec2_offerings + ec2_offerings[:1], trainium_facts.zone_index(ec2_zones))
    assert [z["name"] for z in grouped["trn1.32xlarge"]] == ["us-west-2b", "us-west-2d"]


def test_offered_zones_unknown_zone_has_no_id():
    grouped = trainium_facts.offered_zones([{"InstanceType": "trn1.32xlarge", "Location": "us-west-2z"}], {})
    assert grouped == {"trn1.32xlarge": [{"name": "us-west-2z", "id": None}]}


def test_summarize_capacity_block(ec2_reservations):
    assert trainium_facts.summarize_reservation(ec2_reservations[0]) == {
        "id": "cr-0123456789abcdef0",
        "instance_type": "trn1.32xlarge",
        "availability_zone": "us-west-2d",
        "availability_zone_id": "usw2-az4",
        "state": "active",
        "reservation_type": "capacity-block",
        "total_instance_count": 4,
        "available_instance_count": 4,
        "instance_match_criteria": "targeted",
        "start_date": "2025-06-02 11:30:00+00:00",
        "end_date": "2025-06-16 11:30:00+00:00",
    }


def test_summarize_on_demand_reservation_defaults(ec2_reservations):
    summary = trainium_facts.summarize_reservation(ec2_reservations[1])
    assert summary["reservation_type"] == "default"
    assert summary["start_date"] is None
    assert summary["end_date"] is None
    assert summary["available_instance_count"] == 1
    assert summary["instance_match_criteria"] == "open"


def test_build_capacity_facts(ec2_instance_types, ec2_offerings, ec2_zones, ec2_local_zone, ec2_reservations):
    facts = trainium_facts.build_capacity_facts(
        ["trn1.32xlarge", "trn1n.32xlarge"], ec2_instance_types, ec2_offerings, ec2_zones + [ec2_local_zone], ec2_reservations,
    )
    assert sorted(facts) == ["availability_zones", "capacity_reservations", "instance_types"]
    assert sorted(facts["instance_types"]) == ["trn1.32xlarge", "trn1n.32xlarge"]
    trn1 = facts["instance_types"]["trn1.32xlarge"]
    assert trn1["known"] is True
    assert trn1["offered"] is True
    assert trn1["availability_zones"] == ["us-west-2b", "us-west-2d"]
    assert trn1["availability_zone_ids"] == ["usw2-az1", "usw2-az4"]
    assert trn1["neuron_cores"] == 32
    assert trn1["max_efa_interfaces"] == 8
    trn1n = facts["instance_types"]["trn1n.32xlarge"]
    assert trn1n["availability_zones"] == ["us-west-2d"]
    assert trn1n["availability_zone_ids"] == ["usw2-az4"]
    assert trn1n["max_efa_interfaces"] == 16
    assert facts["availability_zones"] == [
        {"zone_name": "us-west-2a", "zone_id": "usw2-az2", "state": "available"},
        {"zone_name": "us-west-2b", "zone_id": "usw2-az1", "state": "available"},
        {"zone_name": "us-west-2c", "zone_id": "usw2-az3", "state": "available"},
        {"zone_name": "us-west-2d", "zone_id": "usw2-az4", "state": "available"},
    ]
    assert [r["id"] for r in facts["capacity_reservations"]] == ["cr-0123456789abcdef0", "cr-0fedcba9876543210"]


def test_type_unknown_to_the_region(ec2_instance_types, ec2_offerings, ec2_zones):
    facts = trainium_facts.build_capacity_facts(["trn3.48xlarge"], ec2_instance_types, ec2_offerings, ec2_zones, [])
    assert facts["instance_types"] == {
        "trn3.48xlarge": {
            "instance_type": "trn3.48xlarge",
            "known": False,
            "offered": False,
            "availability_zones": [],
            "availability_zone_ids": [],
        }
    }
    assert facts["capacity_reservations"] == []


def test_known_type_not_offered(ec2_instance_types, ec2_offerings, ec2_zones):
    # DescribeInstanceTypes knows trn2.48xlarge but no zone of the region offers it.
    entry = trainium_facts.build_capacity_facts(["trn2.48xlarge"], ec2_instance_types, ec2_offerings, ec2_zones, [])["instance_types"]["trn2.48xlarge"]
    assert entry["known"] is True
    assert entry["offered"] is False
    assert entry["availability_zones"] == []
    assert entry["availability_zone_ids"] == []
    assert entry["neuron_cores"] == 128


def test_usable_reservation_states():
    assert trainium_facts.USABLE_RESERVATION_STATES == ("active", "scheduled")
