# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure functions that turn EC2 API answers into Trainium facts.

Nothing here talks to AWS, so the parsing can be unit tested on plain dicts
shaped like the documented DescribeInstanceTypes, DescribeInstanceTypeOfferings,
DescribeAvailabilityZones and DescribeCapacityReservations responses.
"""

from __future__ import annotations

# Reservation states preflight reads. A Capacity Block that is "scheduled"
# becomes usable at its start date: the placement refuses it until then,
# naming the start (trainium_deployment._place_pool).
USABLE_RESERVATION_STATES = ("active", "scheduled")


def summarize_instance_type(info):
    """Reduce one DescribeInstanceTypes entry to the figures the collection uses."""
    neuron = info.get("NeuronInfo") or {}
    devices = neuron.get("NeuronDevices") or []
    device_count = sum(int(d.get("Count", 0)) for d in devices)
    cores = sum(int(d.get("Count", 0)) * int((d.get("CoreInfo") or {}).get("Count", 0)) for d in devices)
    device_memory = neuron.get("TotalNeuronDeviceMemoryInMiB")
    if device_memory is None:
        device_memory = sum(int(d.get("Count", 0)) * int((d.get("MemoryInfo") or {}).get("SizeInMiB", 0)) for d in devices)
    network = info.get("NetworkInfo") or {}
    efa = network.get("EfaInfo") or {}
    return {
        "instance_type": info["InstanceType"],
        "neuron_device_name": devices[0].get("Name") if devices else None,
        "neuron_devices": device_count,
        "neuron_cores": cores,
        "neuron_cores_per_device": int((devices[0].get("CoreInfo") or {}).get("Count", 0)) if devices else 0,
        "neuron_device_memory_mib": int(device_memory),
        "efa_supported": bool(network.get("EfaSupported", False)),
        "max_efa_interfaces": int(efa.get("MaximumEfaInterfaces", 0)),
        "network_cards": int(network.get("MaximumNetworkCards", 1)),
        "max_network_interfaces": int(network.get("MaximumNetworkInterfaces", 0)),
        "ipv4_addresses_per_interface": int(network.get("Ipv4AddressesPerInterface", 0)),
        "vcpus": int((info.get("VCpuInfo") or {}).get("DefaultVCpus", 0)),
        "memory_mib": int((info.get("MemoryInfo") or {}).get("SizeInMiB", 0)),
    }


def zone_index(availability_zones):
    """Map zone name -> zone id from a DescribeAvailabilityZones answer."""
    return {z["ZoneName"]: z["ZoneId"] for z in availability_zones if z.get("ZoneType", "availability-zone") == "availability-zone"}


def offered_zones(offerings, zones_by_name):
    """Group DescribeInstanceTypeOfferings (location type availability-zone) by type.

    Returns {instance_type: [{"name": ..., "id": ...}, ...]} sorted by zone name.
    """
    grouped = {}
    for offer in offerings:
        name = offer["Location"]
        grouped.setdefault(offer["InstanceType"], set()).add(name)
    return {
        itype: [{"name": name, "id": zones_by_name.get(name)} for name in sorted(names)]
        for itype, names in grouped.items()
    }


def summarize_reservation(reservation):
    """Reduce one DescribeCapacityReservations entry."""
    return {
        "id": reservation["CapacityReservationId"],
        "instance_type": reservation.get("InstanceType"),
        "availability_zone": reservation.get("AvailabilityZone"),
        "availability_zone_id": reservation.get("AvailabilityZoneId"),
        "state": reservation.get("State"),
        "reservation_type": reservation.get("ReservationType", "default"),
        "total_instance_count": int(reservation.get("TotalInstanceCount", 0)),
        "available_instance_count": int(reservation.get("AvailableInstanceCount", 0)),
        "instance_match_criteria": reservation.get("InstanceMatchCriteria"),
        "start_date": str(reservation["StartDate"]) if reservation.get("StartDate") else None,
        "end_date": str(reservation["EndDate"]) if reservation.get("EndDate") else None,
    }


def build_capacity_facts(requested_types, type_infos, offerings, availability_zones, reservations):
    """Assemble the module's return value from the raw API answers.

    Every requested type gets an entry; a type the region does not know, or
    that no zone offers, has ``offered: false`` and empty zone lists so the
    caller can explain the problem instead of hitting a KeyError.
    """
    zones_by_name = zone_index(availability_zones)
    by_type = offered_zones(offerings, zones_by_name)
    specs = {info["InstanceType"]: summarize_instance_type(info) for info in type_infos}
    result = {}
    for itype in requested_types:
        zones = by_type.get(itype, [])
        entry = {"instance_type": itype, "known": itype in specs}
        entry.update(specs.get(itype, {}))
        entry["offered"] = bool(zones)
        entry["availability_zones"] = [z["name"] for z in zones]
        entry["availability_zone_ids"] = [z["id"] for z in zones]
        result[itype] = entry
    return {
        "instance_types": result,
        "availability_zones": [
            {"zone_name": z["ZoneName"], "zone_id": z["ZoneId"], "state": z.get("State")}
            for z in sorted(availability_zones, key=lambda z: z["ZoneName"])
            if z.get("ZoneType", "availability-zone") == "availability-zone"
        ],
        "capacity_reservations": [summarize_reservation(r) for r in reservations],
    }
