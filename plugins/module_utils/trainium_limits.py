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

# The capacity type a node group needs on each kind of reservation: a Capacity
# Block for ML (ReservationType capacity-block) takes CAPACITY_BLOCK and a launch
# template with market type capacity-block; an On-Demand Capacity Reservation
# (ReservationType default) takes ON_DEMAND (Amazon EKS User Guide, "Create a
# managed node group with Capacity Blocks for ML" and "Use On-Demand Capacity
# Reservations with managed node groups"; EC2 API Reference,
# CapacityReservation.ReservationType).
RESERVATION_CAPACITY_TYPES = {"capacity-block": "CAPACITY_BLOCK", "default": "ON_DEMAND"}

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


# EKS node group names: letters, digits, '-' and '_', starting with a letter
# or digit, at most 63 characters (Amazon EKS User Guide, "Create a managed
# node group"; the API answers "nodeGroupName can't be longer than 63
# characters!"). The collection names a pool's node group <cluster>-<pool>.
NODEGROUP_NAME_MAX = 63
NODEGROUP_NAME_RULE = (f"at most {NODEGROUP_NAME_MAX} characters for the node group name <trainium_cluster_name>-<name> "
                       "(EKS CreateNodegroup, nodegroupName)")

# EKS CreateNodegroup, labels: key and value 1-63 characters each; taints: key
# 1-63, value 0-63 (Amazon EKS API Reference, CreateNodegroup and Taint).
EKS_LABEL_MAX = 63

# kubelet refuses --node-labels in the kubernetes.io and k8s.io namespaces
# (and their subdomains) unless the key is one it sets itself or lies under
# kubelet.kubernetes.io or node.kubernetes.io (Kubernetes,
# cmd/kubelet/app/options ValidateKubeletFlags; k8s.io/kubelet
# pkg/apis/well_known_labels.go). A node group with such a label gets nodes
# that never join.
KUBELET_LABELS = (
    "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch", "kubernetes.io/hostname", "kubernetes.io/os", "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region", "topology.kubernetes.io/zone",
)
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _in_namespace(namespace, domain):
    return namespace == domain or namespace.endswith("." + domain)


def kubelet_refuses_label(key):
    """Whether kubelet refuses ``key`` in --node-labels (a reserved namespace it does not allow)."""
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if not (_in_namespace(namespace, "kubernetes.io") or _in_namespace(namespace, "k8s.io")):
        return False
    return key not in KUBELET_LABELS and not any(_in_namespace(namespace, allowed) for allowed in KUBELET_LABEL_NAMESPACES)


# The Trainium instance types the collection deploys, each with EC2's figures
# (DescribeInstanceTypes: NeuronInfo device count and cores per device,
# VCpuInfo, MemoryInfo, NetworkInfo.EfaInfo.MaximumEfaInterfaces) and Neuron's
# ("Amazon EC2 Trn1/Trn1n Architecture", "Amazon EC2 Trn2 Architecture"). The
# one table of these facts: the job's resources, the device plugins' pools, the
# capacity lookup and the validation all read it. Trn3 has no row: neither
# EC2's nor Neuron's documentation names its instance sizes yet (Neuron's EKS
# page says "Trn3pds", its architecture page gives UltraServers only); its
# family's facts are below, so that it becomes one row here once AWS names them.
TRAINIUM_TYPE_FIELDS = ("devices", "cores_per_device", "efa_interfaces", "vcpus", "memory_gib")
TRAINIUM_TYPE_FACTS = {
    "trn1.2xlarge": dict(zip(TRAINIUM_TYPE_FIELDS, (1, 2, 0, 8, 32))),
    "trn1.32xlarge": dict(zip(TRAINIUM_TYPE_FIELDS, (16, 2, 8, 128, 512))),
    "trn1n.32xlarge": dict(zip(TRAINIUM_TYPE_FIELDS, (16, 2, 16, 128, 512))),
    "trn2.48xlarge": dict(zip(TRAINIUM_TYPE_FIELDS, (16, 8, 16, 192, 2048))),
}
TRAINIUM_INSTANCE_TYPES = tuple(TRAINIUM_TYPE_FACTS)


def type_fact(instance_type, field):
    """One figure of TRAINIUM_TYPE_FACTS (``devices``, ``efa_interfaces``, ...), None for a type it does not list."""
    return (TRAINIUM_TYPE_FACTS.get(instance_type) or {}).get(field)


# Logical NeuronCore configuration (LNC): how many physical NeuronCores make
# one logical NeuronCore, the unit the device plugin advertises as
# aws.amazon.com/neuroncore and a training process (rank) runs on. Trainium2
# devices hold 8 physical cores and default to LNC=2 (4 logical cores per
# device, 64 per trn2.48xlarge); LNC=1 is set on the node
# (/opt/aws/neuron/logical_nc_config) and in NEURON_LOGICAL_NC_CONFIG.
# trn1 supports LNC=1 only. Sources: Neuron documentation, "Logical
# NeuronCore configuration" and "EKS prerequisites" (Trn2 LNC
# configuration); Neuron compiler error EARG001 ("On trn1, only lnc=1 is
# supported"). Trainium3 devices hold 8 NeuronCore-v4 and take LNC 1 or 2
# ("LNC applies only to Trn2 and Trn3 instances"; "TRN2 and TRN3 provide two
# physical cores per logical NeuronCore").
LNC_CHOICES = {"trn1": (1,), "trn1n": (1,), "trn2": (1, 2), "trn3": (1, 2)}
LNC_DEFAULTS = {"trn1": 1, "trn1n": 1, "trn2": 2, "trn3": 2}


def instance_family(instance_type):
    """``trn2`` of ``trn2.48xlarge``."""
    return str(instance_type).split(".", 1)[0]


def lnc_choices(instance_type):
    """The LNC values the instance type supports (1 alone where Neuron documents no other)."""
    return LNC_CHOICES.get(instance_family(instance_type), (1,))


def default_lnc(instance_type):
    """The LNC a node of the type has unless told otherwise (the AMI's default)."""
    return LNC_DEFAULTS.get(instance_family(instance_type), 1)


def pool_lnc(pool):
    """The LNC of a node pool (or of anything with ``instance_type`` and ``logical_nc_config``): its own, else the type's."""
    value = pool.get("logical_nc_config")
    return default_lnc(pool.get("instance_type")) if value is None else value


def logical_neuron_cores(physical_cores, lnc):
    """The NeuronCores a node advertises and runs ranks on: physical cores grouped by ``lnc``."""
    return int(physical_cores or 0) // max(int(lnc or 1), 1)


# Addresses of a subnet: AWS reserves the first four and the last one of every
# subnet CIDR block (Amazon VPC User Guide, "Subnet CIDR blocks").
SUBNET_RESERVED_ADDRESSES = 5

# VPC addresses one node takes from its subnet with the VPC CNI's defaults
# (WARM_ENI_TARGET=1, no prefix delegation): its primary interface with all of
# its addresses, and one warm interface of as many once a pod takes an address
# of the first (aws/amazon-vpc-cni-k8s docs/eni-and-ip-target.md; EKS Best
# Practices Guide, "Amazon VPC CNI"). EFA-only interfaces take none (EKS User
# Guide, "Manage EFA devices on Amazon EKS"). The figure per interface is EC2's
# Ipv4AddressesPerInterface (DescribeInstanceTypes): 50 on trn1, trn1n and trn2.
INTERFACES_PER_NODE = 2
# The widest subnet the network role creates (network_private_subnet_prefix 16-28; trainium_validation).
SHORTEST_SUBNET_PREFIX = 16
ADDRESSES_RULE = ("VPC CNI defaults: a node's primary interface and one warm interface, each with its instance type's "
                  "Ipv4AddressesPerInterface; AWS reserves 5 addresses per subnet")


def usable_addresses(prefix_length):
    """Addresses of an IPv4 subnet of ``prefix_length`` that instances can use."""
    return 2 ** (32 - prefix_length) - SUBNET_RESERVED_ADDRESSES


def subnet_address_problems(subnets_by_zone, pools, instance_types, variable):
    """One line per zone whose private subnet cannot hold the addresses of its node pools at their largest size.

    ``subnets_by_zone``: {zone: {"private": CIDR, "subnet_id": ID (a subnet brought by the user)}};
    ``pools``: placed node pools (name, instance_type, availability_zone, count, max_count);
    ``instance_types``: {type: {"ipv4_addresses_per_interface": N}}; ``variable``: the setting to name
    (network_private_subnet_prefix for a created network, network_private_subnet_ids for one brought)."""
    problems = []
    for zone in sorted(subnets_by_zone or {}):
        subnet = subnets_by_zone[zone] or {}
        cidr = subnet.get("private")
        if not isinstance(cidr, str) or "/" not in cidr:
            continue
        prefix = int(cidr.rsplit("/", 1)[1])
        have = usable_addresses(prefix)
        parts, need = [], 0
        for pool in pools or []:
            per_interface = int((instance_types.get(pool.get("instance_type")) or {}).get("ipv4_addresses_per_interface") or 0)
            nodes = pool.get("max_count") if pool.get("max_count") is not None else pool.get("count") or 0
            if pool.get("availability_zone") != zone or not per_interface or not nodes:
                continue
            each = INTERFACES_PER_NODE * per_interface
            need += nodes * each
            parts.append(f"{pool['name']} {nodes} x {pool['instance_type']} x {each}")
        if need <= have:
            continue
        fits = next(p for p in range(prefix, 0, -1) if usable_addresses(p) >= need)
        where = f"{subnet['subnet_id']} ({cidr})" if subnet.get("subnet_id") else f"the private subnet {cidr}"
        if fits < SHORTEST_SUBNET_PREFIX:
            allowed = (f"fewer nodes in {zone} (max_count), or pools spread over more zones: no subnet of "
                       f"/{SHORTEST_SUBNET_PREFIX} or longer holds them")
        elif variable == "network_private_subnet_prefix":
            allowed = f"{fits} or shorter (the VPC, network_vpc_cidr, must hold one such subnet per zone)"
        else:
            allowed = f"a private subnet of /{fits} or wider in {zone}"
        problems.append(f"{variable}: {where} of {zone} has {have} usable addresses and its node pools need up to {need} "
                        f"({', '.join(parts)}; {ADDRESSES_RULE}); allowed: {allowed}")
    return problems


# The oldest Amazon VPC CNI that works with EFA-only network interfaces, which the
# launch templates use (EKS User Guide, "Run machine learning training on Amazon EKS
# with Elastic Fabric Adapter": "You must have VPC CNI version 1.18.5 or later for
# EFA-only interfaces").
VPC_CNI_EFA_ONLY_MIN = (1, 18, 5)


def vpc_cni_too_old(version):
    """Whether a vpc-cni add-on version (v1.20.4-eksbuild.1) is older than VPC_CNI_EFA_ONLY_MIN; False when unparsable."""
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", str(version or ""))
    return bool(match) and tuple(int(part) for part in match.groups()) < VPC_CNI_EFA_ONLY_MIN


# The Neuron driver (aws-neuronx-dkms) of the EKS-optimized AL2023 Neuron AMI: the
# first release that ships each driver (awslabs/amazon-eks-ami CHANGELOG.md, the
# AL2023_x86_64_NEURON rows). The driver of a release is the last entry at or
# before its date; a release before the first entry ships an older driver.
NEURON_AMI_DRIVERS = (
    ("20250920", (2, 24)), ("20260107", (2, 25)), ("20260304", (2, 26)),
    ("20260409", (2, 27)), ("20260610", (2, 28)), ("20260714", (2, 29)),
)
# What the Neuron runtime of an SDK needs of the driver (Neuron release notes,
# "Neuron Runtime" and "Neuron DLC"): SDK 2.30's runtime 2.32 "is not
# backward-compatible with Neuron Driver 2.26 or earlier"; "Neuron Driver 2.29
# requires Neuron Runtime Library 2.33 or later" (SDK 2.31).
NEURON_SDK_MIN_DRIVER = (((2, 30), (2, 27)),)
NEURON_DRIVER_MIN_SDK = (((2, 29), (2, 31)),)
NEURON_AMI_RELEASE_RE = re.compile(r"-v(\d{8})$")
NEURON_IMAGE_SDK_RE = re.compile(r"[-_]sdk(\d+)\.(\d+)(?:\.\d+)*(?:[-_]|$)")


def dotted(pair):
    """(2, 29) as '2.29'."""
    return ".".join(str(part) for part in pair)


# A release older than the table's first: its driver is older than the first entry's (a driver never goes back).
OLDER_THAN_TABLE = (0, 0)


def ami_neuron_driver(release):
    """(major, minor) of the Neuron driver of an AL2023 Neuron AMI release name, the newest known for
    ``recommended`` (a driver never goes back), OLDER_THAN_TABLE for a release before the table, or None when
    the name carries no release date."""
    if release == "recommended":
        return NEURON_AMI_DRIVERS[-1][1]
    match = NEURON_AMI_RELEASE_RE.search(str(release or ""))
    if not match:
        return None
    known = [driver for date, driver in NEURON_AMI_DRIVERS if date <= match.group(1)]
    return known[-1] if known else OLDER_THAN_TABLE


def image_tag(image):
    """The tag of an image reference ('' without one; a digest does not count)."""
    name = str(image or "").split("@", 1)[0].rsplit("/", 1)[-1]
    return name.split(":", 1)[1] if ":" in name else ""


def image_neuron_sdk(image):
    """(major, minor) of the Neuron SDK that a Neuron Deep Learning Container's tag names (...:2.9.0-neuronx-py312-sdk2.30.0-...);
    the repository's name and a digest do not count."""
    match = NEURON_IMAGE_SDK_RE.search("-" + image_tag(image))
    return (int(match.group(1)), int(match.group(2))) if match else None


def neuron_driver_problem(release, image):
    """What the AMI release may be, and why, when its Neuron driver does not run the training image's Neuron SDK;
    None when it does or either side is not known (a custom AMI, an image whose tag names no SDK)."""
    driver, sdk = ami_neuron_driver(release), image_neuron_sdk(image)
    if driver is None or sdk is None:
        return None
    lowest = max([driver_min for sdk_from, driver_min in NEURON_SDK_MIN_DRIVER if sdk >= sdk_from], default=None)
    too_new = min([driver_from for driver_from, sdk_min in NEURON_DRIVER_MIN_SDK if sdk < sdk_min], default=None)
    if (lowest is None or driver >= lowest) and (too_new is None or driver < too_new):
        return None
    what = "today's recommended release" if release == "recommended" else release
    shipped = (f"a Neuron driver older than {dotted(NEURON_AMI_DRIVERS[0][1])}" if driver == OLDER_THAN_TABLE
               else f"Neuron driver {dotted(driver)}{' or later' if release == 'recommended' else ''}")
    if lowest is not None and driver < lowest:
        why = f"the Neuron runtime of trainium_image.base_image (SDK {dotted(sdk)}) needs driver {dotted(lowest)} or later"
    else:
        sdk_min = next(sdk_min for driver_from, sdk_min in NEURON_DRIVER_MIN_SDK if driver_from == too_new)
        why = (f"driver {dotted(too_new)} needs the Neuron runtime of SDK {dotted(sdk_min)} or later "
               f"and trainium_image.base_image is SDK {dotted(sdk)}")
    dates = [date for date, found in NEURON_AMI_DRIVERS if (lowest is None or found >= lowest) and (too_new is None or found < too_new)]
    end = next((date for date, found in NEURON_AMI_DRIVERS if too_new is not None and found >= too_new), None)
    window = (f"a release from v{dates[0]}" if dates else "no AL2023 Neuron release") + (f" up to, not including, v{end}" if end and dates else "")
    example = f", such as amazon-eks-node-al2023-x86_64-neuron-<version>-v{dates[-1]}" if dates else ""
    newer = f", or a base image of SDK {dotted(next(m for f, m in NEURON_DRIVER_MIN_SDK if f == too_new))} or later" if too_new else ""
    return f"{window}{example}{newer}: {what} ships {shipped}, and {why} (Neuron release notes)"
