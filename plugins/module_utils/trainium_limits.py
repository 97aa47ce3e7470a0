# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""AWS's documented choices and limits that more than one part of the
collection checks, each spelled once, with the function that applies it.

Pure Python (no boto3, no Ansible): the validation pass, the filters and the
modules import the same names, so a rule cannot drift between the layers.
Where a rule comes from AWS's documentation, the source is named beside it.
"""

from __future__ import annotations

import re

# EKS CreateNodegroup, capacityType (Amazon EKS API Reference).
CAPACITY_TYPES = ("ON_DEMAND", "SPOT", "CAPACITY_BLOCK")

# EC2 instance type names: family (m7i, m7i-flex, u-6tb1) '.' size (32xlarge, metal-24xl).
INSTANCE_TYPE_RE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")

# FSx for Lustre deployment types with SSD storage, and the throughput per
# unit of storage (MB/s/TiB) each allows, none for scratch (Amazon FSx API
# Reference, CreateFileSystemLustreConfiguration, PerUnitStorageThroughput).
FSX_DEPLOYMENT_TYPES = ("SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
FSX_THROUGHPUTS = {"SCRATCH_2": (), "PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}

# SSD storage of those types: 1200 GiB, 2400 GiB, then increments of 2400 GiB
# (Amazon FSx API Reference, CreateFileSystem, StorageCapacity). The upper
# bound is the collection's: far above any account's default FSx quota.
FSX_SMALLEST_CAPACITY = 1200
FSX_CAPACITY_STEP = 2400
FSX_LARGEST_CAPACITY = FSX_CAPACITY_STEP * 1000
FSX_CAPACITY_RULE = (f"{FSX_SMALLEST_CAPACITY}, {FSX_CAPACITY_STEP} or a multiple of {FSX_CAPACITY_STEP} GiB up to "
                     f"{FSX_LARGEST_CAPACITY} (SSD storage of SCRATCH_2, PERSISTENT_1 and PERSISTENT_2)")


def fsx_capacity_ok(capacity):
    """Whether ``capacity`` (GiB) is a storage capacity FSx for Lustre accepts for SSD storage."""
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        return False
    if capacity == FSX_SMALLEST_CAPACITY:
        return True
    return FSX_CAPACITY_STEP <= capacity <= FSX_LARGEST_CAPACITY and not capacity % FSX_CAPACITY_STEP
