# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The validation pass: every variable of every role a run reaches, checked in one place.

Two kinds of checks, both reported as ``<variable>: got <value> (<type>);
allowed: <what>`` lines (:mod:`trainium_problems`):

- the role's argument spec (``meta/argument_specs.yml``, entry point
  ``main``): type, choices, list elements, suboptions, required;
- the role's cross-field rules and ranges, which argument specs cannot say:
  a function per role in :data:`ROLE_RULES`, for the roles that have such
  rules (a role without any is checked against its spec alone); the action
  plugin ``trainium.eks.validate_variables`` runs both for the roles it is
  given (the stage plan's, meta/stages.yml).

The deployment variables (``trainium_*``, :data:`DEPLOYMENT_VARIABLES`) are
shared by all roles; they are checked once, by
:func:`trainium_deployment.deployment_errors`, not per role.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re

from ansible.module_utils.parsing.convert_bool import BOOLEANS, boolean

from ansible_collections.trainium.eks.plugins.module_utils import trainium_fsx as fsx
from ansible_collections.trainium.eks.plugins.module_utils import trainium_limits as limits
from ansible_collections.trainium.eks.plugins.module_utils import trainium_tracks as tracks
from ansible_collections.trainium.eks.plugins.module_utils.trainium_eks import MAX_ADMIN_PRINCIPALS, MAX_KMS_KEY_ADMINS, PRINCIPAL_ARN_PATTERN
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import (
    DEPLOYMENT_VARIABLES,
    DNS_LABEL_RE,
    DNS_SUBDOMAIN_RE,
    IMAGE_TAG_RE,
    INSTANCE_TYPE_RE,
    KUBERNETES_VERSIONS,
    PINNED_IMAGE_RE,
    deployment_errors,
)
from ansible_collections.trainium.eks.plugins.module_utils.trainium_neuron_job import EFA_INTERFACES, pod_option_problems
from ansible_collections.trainium.eks.plugins.module_utils.trainium_problems import Problems, describe, is_int, unique
from ansible_collections.trainium.eks.plugins.module_utils.trainium_survey import SURVEY_VARIABLES

TYPE_WORDS = {
    "str": "a string",
    "path": "a path (string)",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean (true or false)",
    "list": "a list",
    "dict": "a mapping",
}
INT_RE = re.compile(r"^[-+]?[0-9]+$")
FLOAT_RE = re.compile(r"^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)$")


class _Mismatch(Exception):
    pass


def _convert(kind, value):
    """The value as the spec type, converting as Ansible's role validation does; raises _Mismatch."""
    if kind in (None, "raw"):
        return value
    if kind in ("str", "path"):
        if isinstance(value, str):
            return value
    elif kind == "int":
        if is_int(value):
            return value
        if isinstance(value, str) and INT_RE.match(value.strip()):
            return int(value)
    elif kind == "float":
        if is_int(value) or isinstance(value, float):
            return float(value)
        if isinstance(value, str) and FLOAT_RE.match(value.strip()):
            return float(value)
    elif kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, (str, int)) and (value.lower() if isinstance(value, str) else value) in BOOLEANS:
            return boolean(value)
    elif kind == "list":
        if isinstance(value, list):
            return value
        if isinstance(value, str):
            return [item.strip() for item in value.split(",")] if value else []
    elif kind == "dict":
        if isinstance(value, dict):
            return value
        if isinstance(value, str) and value.startswith("{"):
            try:
                loaded = json.loads(value)
            except ValueError:
                loaded = None
            if isinstance(loaded, dict):
                return loaded
    raise _Mismatch()


def check_option(problems, name, spec, value):
    """Check one value against one option spec; returns the converted value (or the value as given)."""
    if value is None:
        if spec.get("required"):
            problems.add(name, value, f"{TYPE_WORDS.get(spec.get('type', 'str'), 'a value')} (required)")
        return value
    kind = spec.get("type", "str")
    try:
        value = _convert(kind, value)
    except _Mismatch:
        problems.add(name, value, TYPE_WORDS.get(kind, kind))
        return value
    choices = spec.get("choices")
    if kind == "list":
        element_spec = {"type": spec.get("elements", "raw"), "choices": choices, "options": spec.get("options")}
        return [check_option(problems, f"{name}[{index}]", element_spec, item) for index, item in enumerate(value)]
    if choices and value not in choices:
        problems.add(name, value, "one of " + ", ".join(str(c) for c in choices))
    if kind == "dict" and spec.get("options"):
        return check_options(problems, name, spec["options"], value)
    return value


def check_options(problems, prefix, options, values):
    """Check a mapping against a spec's options: unknown keys, required keys, each value."""
    checked = dict(values)
    for key in values:
        if key not in options:
            problems.add(f"{prefix}.{key}", values[key], f"no such key; {prefix} takes {', '.join(sorted(options))}")
    for key, spec in options.items():
        checked[key] = check_option(problems, f"{prefix}.{key}", spec, values.get(key))
    return checked


def apply_defaults(options, value):
    """Fill in the suboption defaults of an argument spec (the one place they are written)."""
    if not isinstance(options, dict):
        return value
    if isinstance(value, list):
        return [apply_defaults(options, item) for item in value]
    if not isinstance(value, dict):
        return value
    filled = dict(value)
    for key, spec in options.items():
        if key not in filled and "default" in spec:
            filled[key] = spec["default"]
        if key in filled and spec.get("options"):
            filled[key] = apply_defaults(spec["options"], filled[key])
    return filled


# ---------------------------------------------------------------------------
# Cross-field rules and ranges, one function per role. Each takes the role's
# values (converted by its argument spec) and returns problem lines.

EKS_LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
ECR_NAME_RE = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$")
KMS_ARN_RE = re.compile(r"^arn:aws[a-z-]*:kms:")
AMI_RELEASE_RE = re.compile(r"^(recommended|amazon-eks-node-al2023-x86_64-neuron-[0-9]+[.][0-9]+-v[0-9]{8})$")
AMI_ID_RE = re.compile(r"^ami-[0-9a-f]{8,17}$")
SUBNET_ID_RE = re.compile(r"^subnet-[0-9a-f]{8,17}$")
SECURITY_GROUP_ID_RE = re.compile(r"^sg-[0-9a-f]{8,17}$")
MAINTENANCE_RE = re.compile(r"^[1-7]:([01][0-9]|2[0-3]):[0-5][0-9]$")
VPC_CNI_VERSION_RE = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")
DAILY_TIME_RE = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
# Polling knobs of every role: <role>_<what>_retries / _delay.
RETRIES_RANGE = (1, 1000)
DELAY_RANGE = (1, 600)


def ipv4_network(value):
    if not isinstance(value, str):
        return None
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        return None


# RFC 5737: addresses for examples in documentation; no client ever comes from them.
DOCUMENTATION_NETWORKS = tuple(ipaddress.IPv4Network(block) for block in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
# Public API access wider than this needs eks_cluster_public_access_from_anywhere.
WIDEST_PUBLIC_PREFIX = 16


def public_cidr_problem(cidr, anywhere=False):
    """What is wrong with ``cidr`` as a block allowed to reach the public Kubernetes API; None when nothing.

    Refused: anything but an IPv4 CIDR block; host bits set (the network the
    user probably meant is named); a documentation range (RFC 5737, the
    placeholder of an example inventory); wider than /16 unless ``anywhere``.
    """
    if not isinstance(cidr, str):
        return "an IPv4 CIDR block such as 192.168.10.0/24 (your office, VPN or CI runners)"
    try:
        loose = ipaddress.IPv4Network(cidr, strict=False)
    except ValueError:
        return "an IPv4 CIDR block such as 192.168.10.0/24 (your office, VPN or CI runners)"
    if ipv4_network(cidr) is None:
        return f"an IPv4 CIDR block without host bits, such as {loose} (the network {cidr} is in)"
    if any(loose.overlaps(documentation) for documentation in DOCUMENTATION_NETWORKS) and loose.prefixlen >= 24:
        return ("your own addresses; this is a documentation range (RFC 5737), the placeholder of an example "
                "inventory, which no client ever comes from")
    if loose.prefixlen < WIDEST_PUBLIC_PREFIX and not anywhere:
        return (f"a block of /{WIDEST_PUBLIC_PREFIX} or narrower; /{loose.prefixlen} opens the Kubernetes API to "
                f"{loose.num_addresses:,} addresses (set eks_cluster_public_access_from_anywhere: true to allow it on purpose)")
    return None


def network_problems(values):
    """The network role: NAT mode, VPC CIDR and subnet prefixes, or the VPC and subnets brought."""
    problems = Problems()
    cidr = values.get("network_vpc_cidr")
    vpc = ipv4_network(cidr)
    if vpc is None or not 16 <= vpc.prefixlen <= 24:
        problems.add(
            "network_vpc_cidr", cidr,
            "an IPv4 network in CIDR notation with a prefix from /16 to /24, without host bits (for example 10.0.0.0/16)",
        )
    for name in ("network_private_subnet_prefix", "network_public_subnet_prefix"):
        value = values.get(name)
        if problems.check_int(name, value, 16, 28) and vpc is not None and value < vpc.prefixlen:
            problems.add(name, value, f"a prefix not shorter than the VPC's /{vpc.prefixlen} (network_vpc_cidr {cidr})")
    vpc_id = values.get("network_vpc_id")
    private = values.get("network_private_subnet_ids") or []
    public = values.get("network_public_subnet_ids") or []
    for name, ids in (("network_private_subnet_ids", private), ("network_public_subnet_ids", public)):
        for index, subnet in enumerate(ids):
            if not isinstance(subnet, str) or not subnet.startswith("subnet-"):
                problems.add(f"{name}[{index}]", subnet, "a subnet ID (subnet-...)")
    if vpc_id:
        if not isinstance(vpc_id, str) or not vpc_id.startswith("vpc-"):
            problems.add("network_vpc_id", vpc_id, "a VPC ID (vpc-...) or empty to create the VPC")
        elif not private:
            problems.add(
                "network_private_subnet_ids", private,
                f"the private subnets of network_vpc_id {vpc_id}, at least one in every cluster zone",
            )
    elif private or public:
        problems.add(
            "network_vpc_id", vpc_id,
            "a VPC ID when network_private_subnet_ids / network_public_subnet_ids are set (bring your own network), "
            "or leave all three empty (create it)",
        )
    return problems


def eks_cluster_problems(values):
    """The eks_cluster role: log types, KMS window, who may reach the public endpoint."""
    problems = Problems()
    logging = values.get("eks_cluster_logging") or []
    bad_logs = [log for log in logging if log not in EKS_LOG_TYPES]
    if bad_logs:
        problems.add("eks_cluster_logging", logging, "any of " + ", ".join(EKS_LOG_TYPES))
    problems.check_int("eks_cluster_kms_deletion_window_days", values.get("eks_cluster_kms_deletion_window_days"), 7, 30)
    cidrs = values.get("eks_cluster_public_access_cidrs") or []
    present = values.get("eks_cluster_state", "present") == "present" and values.get("eks_cluster_endpoint_public_access")
    anywhere = values.get("eks_cluster_public_access_from_anywhere")
    for index, cidr in enumerate(cidrs):
        problem = public_cidr_problem(cidr, anywhere)
        if problem:
            problems.add(f"eks_cluster_public_access_cidrs[{index}]", cidr, problem)
    if present and not cidrs:
        problems.add(
            "eks_cluster_public_access_cidrs", cidrs,
            "the CIDR blocks that may reach the public Kubernetes API (your office, VPN or CI runners), "
            "or eks_cluster_endpoint_public_access: false",
        )
    service_cidr = values.get("eks_cluster_service_ipv4_cidr")
    if service_cidr and ipv4_network(service_cidr) is None:
        problems.add("eks_cluster_service_ipv4_cidr", service_cidr, "empty (EKS chooses) or an IPv4 CIDR block such as 172.20.0.0/16")
    if values.get("eks_cluster_vpc_cni_irsa") and values.get("eks_cluster_oidc_provider") is False:
        problems.add("eks_cluster_vpc_cni_irsa", True,
                     "false while eks_cluster_oidc_provider is false (the CNI's role is assumed through the cluster's OIDC provider)")
    version = values.get("eks_cluster_vpc_cni_version")
    if version and not VPC_CNI_VERSION_RE.match(str(version)):
        problems.add("eks_cluster_vpc_cni_version", version, "empty (EKS's default) or a vpc-cni add-on version such as v1.20.4-eksbuild.1")
    elif version and limits.vpc_cni_too_old(version):
        problems.add("eks_cluster_vpc_cni_version", version,
                     "empty (EKS's default) or v" + ".".join(map(str, limits.VPC_CNI_EFA_ONLY_MIN)) + " or later: the node launch templates use "
                     "EFA-only network interfaces (EKS User Guide, \"Run machine learning training on Amazon EKS with Elastic Fabric Adapter\")")
    problems.extend(eks_access_problems(values))
    problems.extend(kms_key_admin_problems(values))
    return problems


def principal_list_problems(values, name, example, limit):
    """A list of IAM role or user ARNs: each well formed, each once, at most limit of them."""
    problems = Problems()
    arns = values.get(name) or []
    for index, arn in enumerate(arns):
        problems.check_re(f"{name}[{index}]", arn, PRINCIPAL_ARN_PATTERN, f"the ARN of an IAM role or user, such as {example}")
    if len(set(map(str, arns))) < len(arns):
        problems.add(name, arns, "each principal once")
    if len(arns) > limit:
        problems.add(name, arns, f"at most {limit} principals")
    return problems


def kms_key_admin_problems(values):
    """Who the secrets key's policy lets delete and re-policy the key besides the running principal."""
    return principal_list_problems(values, "eks_cluster_kms_key_admins",
                                   "arn:aws:iam::111122223333:role/trn-teardown (for an assumed-role session, its role's ARN, "
                                   "with the role's path)", MAX_KMS_KEY_ADMINS)


def eks_access_problems(values):
    """Who administers the cluster: principal ARNs, their number, and what the authentication mode allows."""
    name = "eks_cluster_admin_principal_arns"
    arns = values.get(name) or []
    problems = principal_list_problems(values, name, "arn:aws:iam::111122223333:role/platform-admins "
                                       "(for an assumed-role session, its role's ARN)", MAX_ADMIN_PRINCIPALS)
    if values.get("eks_cluster_state", "present") != "present":
        return problems
    mode = values.get("eks_cluster_authentication_mode")
    if mode == "CONFIG_MAP" and arns:
        problems.add(name, arns, "[] with eks_cluster_authentication_mode CONFIG_MAP (access entries need API or API_AND_CONFIG_MAP)")
    bootstrap = values.get("eks_cluster_bootstrap_creator_admin")
    if bootstrap is False and mode == "CONFIG_MAP":
        problems.add("eks_cluster_bootstrap_creator_admin", bootstrap,
                     "true with eks_cluster_authentication_mode CONFIG_MAP (EKS refuses false there)")
    elif bootstrap is False and not arns and values.get("eks_cluster_verify_access", True):
        problems.add("eks_cluster_bootstrap_creator_admin", bootstrap,
                     "true, or false with the principal that runs the collection in eks_cluster_admin_principal_arns: nobody "
                     "could use the cluster, and the role reads kube-system through the kubeconfig (eks_cluster_verify_access)")
    return problems


def ecr_problems(values):
    """The ecr role: repository name, encryption, lifecycle policy figures."""
    problems = Problems()
    name = values.get("ecr_repository_name")
    if not isinstance(name, str) or not ECR_NAME_RE.match(name) or not 2 <= len(name) <= 256:
        problems.add("ecr_repository_name", name, "2-256 lowercase letters, digits and . _ - / (an ECR repository name)")
    encryption = values.get("ecr_encryption_type")
    key = values.get("ecr_kms_key") or ""
    if encryption == "AES256" and key:
        problems.add("ecr_kms_key", key, "empty with ecr_encryption_type AES256, or set ecr_encryption_type to KMS")
    if encryption == "KMS" and not KMS_ARN_RE.match(key):
        problems.add("ecr_kms_key", key, "the ARN of a KMS key (arn:aws:kms:...) with ecr_encryption_type KMS")
    problems.check_int("ecr_untagged_expire_days", values.get("ecr_untagged_expire_days"), 1, 3650)
    problems.check_int("ecr_keep_images", values.get("ecr_keep_images"), 1, 10000)
    return problems


def trn_launch_template_problems(values):
    """The trn_launch_template role: AMI, IMDS hop limit, gp3 figures, placement groups with reservations."""
    problems = Problems()
    problems.check_int("trn_launch_template_metadata_hop_limit", values.get("trn_launch_template_metadata_hop_limit"), 1, 64)
    ami_id = values.get("trn_launch_template_ami_id") or ""
    if ami_id:
        problems.check_re("trn_launch_template_ami_id", ami_id, AMI_ID_RE, "an AMI ID (ami-...) or empty for the SSM lookup")
    elif values.get("trn_launch_template_custom_ami"):
        release = values.get("trn_launch_template_ami_release")
        if problems.check_re(
            "trn_launch_template_ami_release", release, AMI_RELEASE_RE,
            "'recommended' or a published AL2023 Neuron release name such as amazon-eks-node-al2023-x86_64-neuron-1.35-v20260625",
        ):
            # The base image given, else the training track's (trainium_tracks).
            framework = tracks.job_framework(values.get("trainium_job"), values.get("trainium_node_pools"))
            mismatch = limits.neuron_driver_problem(release, tracks.base_image(framework, values.get("trainium_image")))
            if mismatch:
                problems.add("trn_launch_template_ami_release", release, mismatch)
    for name, low, high in (("trn_launch_template_root_volume_iops", 3000, 80000), ("trn_launch_template_root_volume_throughput", 125, 2000)):
        if values.get(name) is not None:
            problems.check_int(name, values[name], low, high)
    if values.get("trn_launch_template_placement_groups"):
        for index, pool in enumerate(values.get("trainium_node_pools") or []):
            reservation = pool.get("capacity_reservation_id") if isinstance(pool, dict) else None
            if reservation:
                problems.add(
                    "trn_launch_template_placement_groups", True,
                    f"false while trainium_node_pools[{index}] targets capacity reservation {reservation}: EC2 launches "
                    "instances into a targeted On-Demand Capacity Reservation inside a cluster placement group only "
                    "when the reservation was created in that placement group, and a Capacity Block places its "
                    "instances together by itself; a placement group the collection creates holds neither",
                )
    return problems


def _fsx_throughput_problems(problems, name, dtype, throughput):
    """The per-unit throughput a deployment type allows (none for scratch)."""
    allowed = fsx.THROUGHPUTS[dtype]
    if allowed and throughput not in allowed:
        problems.add(name, throughput, f"one of {', '.join(map(str, allowed))} (MB/s per TiB) for {dtype}")
    if not allowed and throughput is not None:
        problems.add(name, throughput, f"unset (null) for {dtype}")


def _fsx_network_problems(problems, prefix, values):
    """``<prefix>_subnet_id`` and ``<prefix>_security_group_ids``, when given."""
    subnet = values.get(f"{prefix}_subnet_id")
    if subnet:
        problems.check_re(f"{prefix}_subnet_id", subnet, SUBNET_ID_RE, "a subnet ID (subnet-...)")
    for index, group in enumerate(values.get(f"{prefix}_security_group_ids") or []):
        problems.check_re(f"{prefix}_security_group_ids[{index}]", group, SECURITY_GROUP_ID_RE, "a security group ID (sg-...)")


def fsx_lustre_problems(values):
    """The fsx_lustre role: FSx for Lustre capacity, throughput and version rules per deployment type."""
    problems = Problems()
    if values.get("fsx_lustre_state", "present") != "present":
        return problems
    dtype = values.get("fsx_lustre_deployment_type")
    if dtype not in fsx.DEPLOYMENT_TYPES:
        return problems  # the argument spec's choices said so already
    capacity = values.get("fsx_lustre_storage_capacity_gib")
    if not limits.fsx_capacity_ok(capacity):
        problems.add("fsx_lustre_storage_capacity_gib", capacity, fsx.CAPACITY_RULE)
    _fsx_throughput_problems(problems, "fsx_lustre_per_unit_storage_throughput", dtype, values.get("fsx_lustre_per_unit_storage_throughput"))
    version = values.get("fsx_lustre_file_system_type_version")
    if version not in fsx.LUSTRE_VERSIONS[dtype]:
        problems.add("fsx_lustre_file_system_type_version", version, f"one of {', '.join(fsx.LUSTRE_VERSIONS[dtype])} for {dtype}")
    if values.get("fsx_lustre_kms_key_id") and dtype not in fsx.PERSISTENT_TYPES:
        problems.add("fsx_lustre_kms_key_id", values["fsx_lustre_kms_key_id"], f"empty for {dtype} (scratch file systems use an FSx-managed key)")
    window = values.get("fsx_lustre_weekly_maintenance_start_time")
    if window and not MAINTENANCE_RE.match(str(window)):
        problems.add("fsx_lustre_weekly_maintenance_start_time", window, "d:HH:MM in UTC, d from 1 (Monday) to 7 (Sunday), for example 7:03:00")
    backup_window = values.get("fsx_lustre_daily_automatic_backup_start_time")
    if backup_window and not DAILY_TIME_RE.match(str(backup_window)):
        problems.add("fsx_lustre_daily_automatic_backup_start_time", backup_window, "empty (AWS chooses) or HH:MM in UTC, for example 05:00")
    _fsx_network_problems(problems, "fsx_lustre", values)
    restore = values.get("fsx_lustre_restore_backup")
    if restore and restore != fsx.LATEST_BACKUP:
        problems.check_re("fsx_lustre_restore_backup", restore, fsx.BACKUP_ID_RE,
                          f"empty (a new, empty file system), {fsx.LATEST_BACKUP!r} (the newest backup of this file system) or a backup ID (backup-...)")
    if restore and values.get("fsx_lustre_data_repository_path"):
        problems.add("fsx_lustre_restore_backup", restore, "empty with fsx_lustre_data_repository_path (FSx keeps no backups of a file system"
                     " linked to an S3 data repository)")
    return problems


def system_nodegroup_problems(values):
    """The system_nodegroup role: the IMDS hop limit (the pool itself is trainium_system_node_pool, checked with the deployment)."""
    problems = Problems()
    problems.check_int("system_nodegroup_metadata_hop_limit", values.get("system_nodegroup_metadata_hop_limit"), 1, 64)
    return problems


# The platform roles (Kubernetes side).
PINNED_IMAGE_RULE = "a pinned image reference, registry/name:tag or registry/name@sha256:<digest> (not the tag latest)"
AWS_ACCOUNT_RE = re.compile(r"^[0-9]{12}$")
WAIT_TIMEOUT_RANGE = (1, 3600)


def image_is_pinned(image):
    """Whether ``image`` is a full reference with a tag or a digest, and the tag is not ``latest``."""
    if not isinstance(image, str) or not PINNED_IMAGE_RE.match(image):
        return False
    name, digest = (image.split("@", 1) + [""])[:2]
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return bool(digest or tag) and tag != "latest"


def _instance_types_problems(problems, name, types):
    if not isinstance(types, list) or not types:
        problems.add(name, types, "a non-empty list of EC2 instance types (the node label node.kubernetes.io/instance-type)")
        return
    for index, instance_type in enumerate(types):
        problems.check_re(f"{name}[{index}]", instance_type, INSTANCE_TYPE_RE, "an EC2 instance type such as trn1.32xlarge")
    if len(set(map(str, types))) < len(types):
        problems.add(name, types, "each instance type once")


def _node_agent_problems(role, values, image_names=None):
    """What every node-agent role checks: pinned images, instance types, wait timeout."""
    problems = Problems()
    for name in image_names if image_names is not None else (f"{role}_image",):
        if not image_is_pinned(values.get(name)):
            problems.add(name, values.get(name), PINNED_IMAGE_RULE)
    _instance_types_problems(problems, f"{role}_instance_types", values.get(f"{role}_instance_types"))
    problems.check_int(f"{role}_wait_timeout", values.get(f"{role}_wait_timeout"), *WAIT_TIMEOUT_RANGE)
    return problems


def _pool_types_covered(problems, name, types, pools, needs, what):
    """One line per pool whose instance type a device plugin's DaemonSet would not run on (it selects nodes by type)."""
    if not isinstance(types, list) or not isinstance(pools, list):
        return
    for index, pool in enumerate(pools):
        itype = pool.get("instance_type") if isinstance(pool, dict) else None
        if isinstance(itype, str) and needs(itype) and itype not in types:
            problems.add(name, types, f"a list that holds {itype}, the instance type of trainium_node_pools[{index}]: the DaemonSet runs "
                                      f"only on the listed types, and without it those nodes {what}")


def neuron_device_plugin_problems(values):
    """The neuron_device_plugin role: pinned image, instance types (every pool's among them), wait timeout; the scheduler
    extension is not there yet."""
    problems = _node_agent_problems("neuron_device_plugin", values)
    _pool_types_covered(problems, "neuron_device_plugin_instance_types", values.get("neuron_device_plugin_instance_types"),
                        values.get("trainium_node_pools"), lambda itype: True,
                        "advertise no aws.amazon.com/neuron and no job can be placed on them")
    if values.get("neuron_device_plugin_scheduler_extension"):
        problems.add("neuron_device_plugin_scheduler_extension", True,
                     "false; the Neuron scheduler extension is not implemented yet (whole-node jobs do not need it)")
    return problems


def efa_device_plugin_problems(values):
    """The efa_device_plugin role: the image (given, or the EKS add-on registry of the region), instance types, wait timeout."""
    problems = _node_agent_problems("efa_device_plugin", values, image_names=())
    _pool_types_covered(problems, "efa_device_plugin_instance_types", values.get("efa_device_plugin_instance_types"),
                        values.get("trainium_node_pools"), lambda itype: EFA_INTERFACES.get(itype, 0) > 0,
                        "advertise no vpc.amazonaws.com/efa and the job's pods, which ask for every EFA interface, never start")
    accounts = values.get("efa_device_plugin_ecr_accounts")
    if problems.check_mapping("efa_device_plugin_ecr_accounts", accounts):
        for region, account in sorted(accounts.items()):
            problems.check_re(f"efa_device_plugin_ecr_accounts.{region}", str(account), AWS_ACCOUNT_RE,
                              "the 12-digit AWS account of the EKS add-on registry of that region")
    if values.get("efa_device_plugin_image"):
        if not image_is_pinned(values["efa_device_plugin_image"]):
            problems.add("efa_device_plugin_image", values["efa_device_plugin_image"], PINNED_IMAGE_RULE + ", or empty for the EKS add-on registry")
        return problems
    tag = values.get("efa_device_plugin_image_tag")
    if not isinstance(tag, str) or not IMAGE_TAG_RE.match(tag) or tag == "latest":
        problems.add("efa_device_plugin_image_tag", tag, "a released tag of the EFA device plugin such as v0.5.20 (not latest)")
    region = values.get("trainium_region")
    if isinstance(accounts, dict) and region not in accounts:
        problems.add("efa_device_plugin_ecr_accounts", sorted(accounts),
                     f"an entry for trainium_region {region} (the account of its EKS add-on registry, AWS docs "
                     "'Amazon container image registries for Amazon EKS add-ons'), or set efa_device_plugin_image")
    return problems


def neuron_monitor_problems(values):
    """The neuron_monitor role: pinned image, namespace, metrics port, instance types, wait timeout."""
    problems = _node_agent_problems("neuron_monitor", values)
    problems.check_re("neuron_monitor_namespace", values.get("neuron_monitor_namespace"), DNS_LABEL_RE,
                      "the name of an existing namespace (a DNS label), kube-system by default")
    problems.check_int("neuron_monitor_port", values.get("neuron_monitor_port"), 1024, 65535)
    return problems


# sha256 of installer/volcano-development.yaml per Volcano release, each
# computed from the file itself, never copied: the file in the module zip that
# the Go module proxy serves for volcano.sh/volcano@<release> (go verifies the
# zip against sum.golang.org; the module zip holds the tag's files as they
# are). The one table: the volcano role reads it through the filter
# trainium.eks.volcano_release_sha256; tests/rehearsal/test_volcano_release_checksums.py
# downloads each release again and compares.
VOLCANO_MANIFEST_SHA256 = {
    "v1.10.0": "98fbe65dd8344308284e91ada82fb025b0514fe6b173ea02013398b236876b2c",
    # Module h1:M0iGzhy1dvod2GFy1QiyWdv1jmmNfHW4+2WoRU7CIAk= (2026-12-04).
    "v1.15.1": "b5fb45a57bcd1132be7055354999d244266873710609afd1f162005772d15c41",
}


# The Kubernetes minor versions each Volcano minor release supports (volcano-sh/volcano README.md, "Kubernetes
# compatibility"): the validation pass refuses a trainium_kubernetes_version outside the pinned release's range.
VOLCANO_KUBERNETES = {
    "v1.10": ("1.21", "1.30"),
    "v1.11": ("1.21", "1.31"),
    "v1.12": ("1.21", "1.32"),
    "v1.13": ("1.23", "1.33"),
    "v1.14": ("1.23", "1.34"),
    "v1.15": ("1.24", "1.35"),
}


def _minor(version):
    return tuple(int(part) for part in version.split("."))


def volcano_kubernetes_problem(volcano_version, kubernetes_version):
    """What is allowed instead of a Kubernetes version the pinned Volcano release does not support, or None (also for a
    release whose range this collection does not know)."""
    # A version EKS does not offer has its line from the deployment variables already.
    if not isinstance(volcano_version, str) or kubernetes_version not in KUBERNETES_VERSIONS:
        return None
    supported = VOLCANO_KUBERNETES.get(".".join(volcano_version.split(".")[:2]))
    if not supported or _minor(supported[0]) <= _minor(kubernetes_version) <= _minor(supported[1]):
        return None
    newer = [v for v, (low, high) in sorted(VOLCANO_KUBERNETES.items(), key=lambda item: _minor(item[0][1:]))
             if _minor(low) <= _minor(kubernetes_version) <= _minor(high)]
    return (f"a version that Volcano {volcano_version} (volcano_version) supports, {supported[0]} to {supported[1]} (Volcano README, "
            "'Kubernetes compatibility'); "
            + (f"or a Volcano release of {', '.join(newer)}" if newer else "no Volcano release this collection knows supports it yet")
            + " (volcano_allow_unsupported_kubernetes: true runs it anyway)")


def volcano_release_sha256(version):
    """The shipped sha256 of a Volcano release's manifest, or '' for a release this collection never checked."""
    return VOLCANO_MANIFEST_SHA256.get(version, "") if isinstance(version, str) else ""


VOLCANO_VERSION_RE = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
VOLCANO_URL_RE = re.compile(r"^(https://[^\s/]+/|file:///)\S+$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
# Volcano makes and keeps these queues itself (its webhook refuses to delete `default`).
VOLCANO_OWN_QUEUES = ("default", "root")
QUEUE_WEIGHT_RANGE = (1, 65535)
RESOURCE_NAME_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
QUANTITY_RE = re.compile(r"^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[mkMGTPE]|[eE][+-]?[0-9]+)?$")


def volcano_problems(values):
    """The volcano role: release, manifest URL and checksum (never trusted on first use), queues, timeouts."""
    problems = Problems()
    version = values.get("volcano_version")
    version_ok = problems.check_re("volcano_version", version, VOLCANO_VERSION_RE, "a Volcano release such as v1.15.1")
    url = values.get("volcano_manifest_url")
    if url is not None:
        problems.check_re("volcano_manifest_url", url, VOLCANO_URL_RE,
                          "an https:// or file:/// URL of the release manifest installer/volcano-development.yaml")
    checksum = values.get("volcano_manifest_sha256") or ""
    if checksum:
        problems.check_re("volcano_manifest_sha256", checksum, SHA256_RE,
                          "empty (the checksum shipped for volcano_version) or a sha256 of 64 lowercase hex digits")
    elif version_ok and version not in VOLCANO_MANIFEST_SHA256:
        shown = url if isinstance(url, str) else "<volcano_manifest_url>"
        problems.add(
            "volcano_manifest_sha256", checksum,
            f"the sha256 of the Volcano {version} manifest {shown}: this collection ships no checksum for {version} "
            f"(only for {', '.join(sorted(VOLCANO_MANIFEST_SHA256))}) and never trusts a download on first use; "
            f"check the file, then compute it with: curl -fsSL {shown} | sha256sum",
        )
    if version_ok and not values.get("volcano_allow_unsupported_kubernetes"):
        allowed = volcano_kubernetes_problem(version, values.get("trainium_kubernetes_version"))
        if allowed:
            problems.add("trainium_kubernetes_version", values.get("trainium_kubernetes_version"), allowed)
    queues = values.get("volcano_queues") or []
    names = []
    for index, queue in enumerate(queues if isinstance(queues, list) else []):
        if not isinstance(queue, dict):
            continue  # the argument spec said so
        base = f"volcano_queues[{index}]"
        name = queue.get("name")
        if problems.check_re(f"{base}.name", name, DNS_LABEL_RE, "a queue name (DNS label: 1-63 lowercase letters, digits and '-')"):
            if name in VOLCANO_OWN_QUEUES:
                problems.add(f"{base}.name", name, "a queue other than default and root, which Volcano makes and keeps itself "
                                                   "(a job may use them without this role)")
            elif name in names:
                problems.add(f"{base}.name", name, "each queue name once")
            names.append(name)
        if queue.get("weight") is not None:
            problems.check_int(f"{base}.weight", queue["weight"], *QUEUE_WEIGHT_RANGE)
        capability = queue.get("capability") or {}
        if isinstance(capability, dict):
            for resource, quantity in capability.items():
                if not isinstance(resource, str) or not RESOURCE_NAME_RE.match(resource):
                    problems.add(f"{base}.capability", resource, "resource names such as cpu, memory or aws.amazon.com/neuron")
                elif isinstance(quantity, bool) or not isinstance(quantity, (str, int)) or not QUANTITY_RE.match(str(quantity)):
                    problems.add(f"{base}.capability.{resource}", quantity, "a Kubernetes quantity such as 16, 500m or 512Gi")
    for name, low, high in (("volcano_wait_timeout", 10, 3600), ("volcano_queue_wait_timeout", 5, 3600)):
        if name in values:
            problems.check_int(name, values[name], low, high)
    return problems


# The platform stage (Kubernetes objects).
SIZE_QUANTITY_RE = re.compile(r"^[1-9][0-9]{0,5}(Ki|Mi|Gi)$")
# registry/name:tag (not latest), optionally @sha256:digest.
TAGGED_IMAGE_RE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+:(?!latest(@|$))[A-Za-z0-9_][A-Za-z0-9._-]{0,127}(@sha256:[0-9a-f]{64})?$")
ETCD_35_IMAGE_RE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+:v3[.]5[.][0-9]+(@sha256:[0-9a-f]{64})?$")
FILE_SYSTEM_ID_RE = re.compile(r"^fs-[0-9a-f]{8,17}$")
HOSTNAME_RE = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?[.])+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
LUSTRE_MOUNT_NAME_RE = re.compile(r"^[A-Za-z0-9_]{1,8}$")
OIDC_PROVIDER_ARN_RE = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:oidc-provider/.+$")
S3_BUCKET_URL_RE = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?$")
STORAGE_WAIT_TIMEOUT_RANGE = (10, 3600)


def _check_namespace(problems, name, value):
    if value is not None:
        problems.check_re(name, value, DNS_LABEL_RE, "a Kubernetes namespace name (DNS label: lowercase letters, digits and '-', at most 63)")


def etcd_problems(values):
    """The etcd role: a 3.5 image (the last line with the v2 API), namespace, emptyDir size, resources, timeout."""
    problems = Problems()
    problems.check_re("etcd_image", values.get("etcd_image"), ETCD_35_IMAGE_RE,
                      "an etcd 3.5 image pinned to its tag, such as quay.io/coreos/etcd:v3.5.34 (3.6 has no v2 API, "
                      "which TorchElastic's etcd backends need)")
    _check_namespace(problems, "etcd_namespace", values.get("etcd_namespace"))
    problems.check_re("etcd_data_size_limit", values.get("etcd_data_size_limit"), SIZE_QUANTITY_RE,
                      "a size in Ki, Mi or Gi such as 1Gi")
    resources = values.get("etcd_resources")
    if isinstance(resources, dict) and not set(resources) <= {"requests", "limits"}:
        problems.add("etcd_resources", resources, "a mapping with requests and/or limits")
    problems.check_int("etcd_wait_timeout", values.get("etcd_wait_timeout"), *STORAGE_WAIT_TIMEOUT_RANGE)
    return problems


FSX_CSI_IMAGES = ("fsx_csi_driver_image", "fsx_csi_provisioner_image", "fsx_csi_resizer_image",
                  "fsx_csi_node_driver_registrar_image", "fsx_csi_livenessprobe_image")


def fsx_csi_problems(values):
    """The fsx_csi role: pinned images, namespaces, and the file system (static) or StorageClass inputs (dynamic).

    Values still unknown here (null: the facts of fsx_lustre and eks_cluster
    come later in the run) are left to the role's upstream-inputs check.
    """
    problems = Problems()
    for name in FSX_CSI_IMAGES:
        problems.check_re(name, values.get(name), TAGGED_IMAGE_RE, "an image pinned to a version tag (registry/name:tag, not latest)")
    _check_namespace(problems, "fsx_csi_namespace", values.get("fsx_csi_namespace"))
    _check_namespace(problems, "fsx_csi_claim_namespace", values.get("fsx_csi_claim_namespace"))
    problems.check_int("fsx_csi_controller_replicas", values.get("fsx_csi_controller_replicas"), 1, 5)
    problems.check_int("fsx_csi_wait_timeout", values.get("fsx_csi_wait_timeout"), *STORAGE_WAIT_TIMEOUT_RANGE)
    if not values.get("fsx_csi_node_instance_types"):
        problems.add("fsx_csi_node_instance_types", values.get("fsx_csi_node_instance_types"),
                     "at least one instance type (the nodes whose pods mount the claim)")
    if values.get("fsx_csi_state", "present") != "present":
        return problems
    if values.get("fsx_csi_dynamic_provisioning"):
        _fsx_csi_dynamic_problems(problems, values)
        return problems
    file_system = values.get("fsx_csi_file_system") or {}
    if not isinstance(file_system, dict):
        return problems  # the argument spec said so already
    checks = (("id", FILE_SYSTEM_ID_RE, "a file system ID (fs- and 8 to 17 hex digits)"),
              ("dns_name", HOSTNAME_RE, "the DNS name of the file system (fs-....fsx.<region>.amazonaws.com)"),
              ("mount_name", LUSTRE_MOUNT_NAME_RE, "the Lustre mount name of the file system (up to 8 letters, digits or _)"))
    for key, regex, allowed in checks:
        if file_system.get(key) is not None:
            problems.check_re(f"fsx_csi_file_system.{key}", file_system[key], regex, allowed)
    capacity = file_system.get("storage_capacity_gib")
    if capacity is not None and not (is_int(capacity) and capacity >= limits.FSX_SMALLEST_CAPACITY):
        problems.add("fsx_csi_file_system.storage_capacity_gib", capacity, f"the capacity of the file system in GiB ({fsx.CAPACITY_RULE})")
    return problems


def _fsx_csi_dynamic_problems(problems, values):
    _fsx_network_problems(problems, "fsx_csi", values)
    dtype = values.get("fsx_csi_deployment_type")
    if dtype in fsx.DEPLOYMENT_TYPES:
        _fsx_throughput_problems(problems, "fsx_csi_per_unit_storage_throughput", dtype, values.get("fsx_csi_per_unit_storage_throughput"))
    capacity = values.get("fsx_csi_dynamic_capacity_gib")
    if capacity is not None and not limits.fsx_capacity_ok(capacity):
        problems.add("fsx_csi_dynamic_capacity_gib", capacity, fsx.CAPACITY_RULE)
    path = values.get("fsx_csi_data_repository_path")
    if path:
        problems.check_re("fsx_csi_data_repository_path", path, S3_BUCKET_URL_RE, "empty or an S3 URL such as s3://bucket/prefix")
    provider = values.get("fsx_csi_oidc_provider_arn")
    if provider:
        problems.check_re("fsx_csi_oidc_provider_arn", provider, OIDC_PROVIDER_ARN_RE,
                          "the ARN of the cluster's IAM OIDC provider (arn:aws:iam::<account>:oidc-provider/...)")


# The training stage: dataset staging and monitoring (issue 11).
TRAINING_DATA_NAME_RE = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9._-]{1,100}$")
S3_OBJECT_URL_RE = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^\s]+$")
TRAINING_WAIT_TIMEOUT_RANGE = (10, 172800)
# Smallest prefix of a source range of the internal load balancer: never 0.0.0.0/0 (nor /1 halves of it).
LB_MIN_PREFIX = {4: 8, 6: 16}


def _check_resources(problems, name, value):
    if isinstance(value, dict) and not set(value) <= {"requests", "limits"}:
        problems.add(name, value, "a mapping with requests and/or limits")


def _check_training_image(problems, name, value):
    # Empty: not known yet (the training_image role's facts come later in the run); the role checks it then.
    if value not in (None, ""):
        problems.check_re(name, value, TAGGED_IMAGE_RE,
                          "the training image, pinned (registry/name:tag, not latest); a run passes what the "
                          "training_image role built")


def training_data_problems(values):
    """The training_data role: the image, the dataset (name, source, sequence length), the Job's knobs."""
    problems = Problems()
    _check_training_image(problems, "training_data_image", values.get("training_data_image"))
    _check_namespace(problems, "training_data_namespace", values.get("training_data_namespace"))
    if "training_data_name" in values:
        problems.check_re("training_data_name", values["training_data_name"], TRAINING_DATA_NAME_RE,
                          "a directory name under /data (letters, digits, '.', '_', '-')")
    source = values.get("training_data_source")
    if source is not None and source != "synthetic" and not (isinstance(source, str) and S3_OBJECT_URL_RE.match(source)):
        problems.add("training_data_source", source, "synthetic, or the s3:// URL of a tar of HDF5 shards")
    if "training_data_seq_len" in values:
        problems.check_int("training_data_seq_len", values["training_data_seq_len"], 8, 8192)
    _check_namespace(problems, "training_data_claim", values.get("training_data_claim"))
    problems.check_int("training_data_backoff_limit", values.get("training_data_backoff_limit", 2), 0, 10)
    problems.check_int("training_data_active_deadline_seconds", values.get("training_data_active_deadline_seconds", 10800),
                       60, 604800)
    problems.check_int("training_data_wait_timeout", values.get("training_data_wait_timeout", 10800),
                       *TRAINING_WAIT_TIMEOUT_RANGE)
    problems.check_re("training_data_tmp_size_limit", values.get("training_data_tmp_size_limit", "2Gi"), SIZE_QUANTITY_RE,
                      "a size in Ki, Mi or Gi such as 2Gi")
    _check_resources(problems, "training_data_resources", values.get("training_data_resources"))
    problems.check_int("training_data_log_lines", values.get("training_data_log_lines", 40), 1, 1000)
    return problems


def monitoring_problems(values):
    """The monitoring role: the TensorBoard image, and the source ranges of the internal load balancer (never open)."""
    problems = Problems()
    _check_training_image(problems, "monitoring_tensorboard_image", values.get("monitoring_tensorboard_image"))
    _check_namespace(problems, "monitoring_namespace", values.get("monitoring_namespace"))
    _check_namespace(problems, "monitoring_claim", values.get("monitoring_claim"))
    _check_resources(problems, "monitoring_resources", values.get("monitoring_resources"))
    problems.check_int("monitoring_wait_timeout", values.get("monitoring_wait_timeout", 300), *STORAGE_WAIT_TIMEOUT_RANGE)
    ranges = values.get("monitoring_lb_source_ranges", [])
    if values.get("monitoring_tensorboard_service") == "internal-lb":
        allowed = ("a non-empty list of CIDRs that may reach the internal load balancer (the VPC's or the VPN's, "
                   "such as 10.0.0.0/16); at least /8 (IPv4) or /16 (IPv6): never 0.0.0.0/0")
        if not isinstance(ranges, list) or not ranges:
            problems.add("monitoring_lb_source_ranges", ranges, allowed)
        else:
            for index, cidr in enumerate(ranges):
                try:
                    network = ipaddress.ip_network(str(cidr), strict=True)
                except ValueError:
                    network = None
                if not isinstance(cidr, str) or network is None or network.prefixlen < LB_MIN_PREFIX[network.version]:
                    problems.add(f"monitoring_lb_source_ranges[{index}]", cidr, allowed)
    return problems


BUILD_ARG_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECRET_WORD_RE = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|ACCESS_KEY)", re.IGNORECASE)
SECRET_BUILDER_OPTIONS = ("--creds", "--password", "--username", "-p", "-u", "--authfile", "--config")


def training_image_problems(values):
    """The training_image role: no secret on a command line or in build args, paths, timeout, isolation."""
    problems = Problems()
    options = values.get("training_image_builder_options") or []
    for index, option in enumerate(options if isinstance(options, list) else []):
        if str(option).split("=", 1)[0] in SECRET_BUILDER_OPTIONS:
            problems.add(f"training_image_builder_options[{index}]", option,
                         "global builder options without credentials or auth files (the role gives the builder a "
                         "temporary auth file with ECR's token)")
    build_args = values.get("training_image_build_args") or {}
    for key in (build_args if isinstance(build_args, dict) else {}):
        if not BUILD_ARG_NAME_RE.match(str(key)):
            problems.add(f"training_image_build_args.{key}", key, "a build argument name (letters, digits and _)")
        elif SECRET_WORD_RE.search(str(key)):
            problems.add(f"training_image_build_args.{key}", key,
                         "no secrets: build arguments stay in the image's history; pass secrets at run time")
    for name in ("training_image_registry_ca_dir", "training_image_context_dir", "training_image_workload_dir"):
        path = values.get(name) or ""
        if path and not (path.startswith("/") or path.startswith("~")):
            problems.add(name, path, "empty or an absolute path (or one starting with ~)")
    if (values.get("training_image_context_dir") or "") in ("/", "~", "~/"):
        problems.add("training_image_context_dir", values.get("training_image_context_dir"),
                     "a directory of its own (absent removes it)")
    if values.get("training_image_builder") == "docker" and values.get("training_image_isolation"):
        problems.add("training_image_isolation", values.get("training_image_isolation"),
                     "empty with training_image_builder docker (isolation is a buildah/podman option)")
    problems.check_int("training_image_timeout", values.get("training_image_timeout"), 60, 86400)
    return problems


TRAINING_JOB_TIMEOUTS = {
    "training_job_wait_timeout": (60, 2_592_000),
    "training_job_pending_timeout": (10, 3600),
    "training_job_report_every": (5, 30),
    "training_job_log_lines": (1, 500),
}
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def training_job_problems(values):
    """The training_job role: timeouts, directories on the shared volume, the image, extra environment."""
    problems = Problems()
    for name, (low, high) in TRAINING_JOB_TIMEOUTS.items():
        if name in values:
            problems.check_int(name, values[name], low, high)
    for name in ("training_job_data_dir", "training_job_output_dir"):
        value = values.get(name)
        if value and (not isinstance(value, str) or not value.startswith("/data/") or ".." in value.split("/")):
            problems.add(name, value, "a directory under /data/ (the shared volume's mount path), or empty for the default")
    script = values.get("training_job_script")
    if script is not None and (not isinstance(script, str) or not script.startswith("/")):
        problems.add("training_job_script", script, "an absolute path inside the image such as /opt/trainium-eks/train_bert.py")
    image = values.get("training_job_image")
    if image and not image_is_pinned(image):
        problems.add("training_job_image", image, "an image pinned by a version tag or a digest, or empty for the image the training_image role built")
    env = values.get("training_job_env")
    if isinstance(env, dict):
        for key, value in env.items():
            if not isinstance(key, str) or not ENV_NAME_RE.match(key):
                problems.add(f"training_job_env.{key}", key, "an environment variable name (letters, digits and '_', not starting with a digit)")
            elif key == "NEURON_LOGICAL_NC_CONFIG":
                problems.add(f"training_job_env.{key}", value, "no such entry: the pods get the node pool's logical_nc_config "
                             "(trainium_node_pools[].logical_nc_config), which the nodes, the job fit and the compile cache follow too")
            elif SECRET_WORD_RE.search(key):
                problems.add(f"training_job_env.{key}", key, "no secrets: the Job's spec shows every value in plain text; "
                             "put it in a Kubernetes Secret the image reads")
            elif not isinstance(value, (str, int, float)) or isinstance(value, bool):
                problems.add(f"training_job_env.{key}", type(value).__name__, "a string value (quote numbers and booleans)")
    for name, value, allowed in pod_option_problems(values, prefix="training_job_"):
        problems.add(name, value, allowed)
    account = values.get("training_job_service_account")
    if account == "default":
        problems.add("training_job_service_account", account, "a ServiceAccount of the job's own such as trainium-eks-training, or empty "
                     "for the namespace's default one (named default, the role would change it and delete it with training_job_state absent)")
    elif account and not (isinstance(account, str) and DNS_SUBDOMAIN_RE.match(account)):
        problems.add("training_job_service_account", account, "a ServiceAccount name (lowercase letters, digits, '-' and '.', at most 253)")
    return problems


def _no_rules(values):
    return []


# The cross-field rules of the roles that have them; every role of the stage
# plan is checked against its argument spec, with these rules where it has some.
ROLE_RULES = {
    "network": network_problems,
    "eks_cluster": eks_cluster_problems,
    "trn_launch_template": trn_launch_template_problems,
    "system_nodegroup": system_nodegroup_problems,
    "ecr": ecr_problems,
    "fsx_lustre": fsx_lustre_problems,
    "neuron_device_plugin": neuron_device_plugin_problems,
    "efa_device_plugin": efa_device_plugin_problems,
    "neuron_monitor": neuron_monitor_problems,
    "volcano": volcano_problems,
    "etcd": etcd_problems,
    "fsx_csi": fsx_csi_problems,
    "training_image": training_image_problems,
    "training_job": training_job_problems,
    "training_data": training_data_problems,
    "monitoring": monitoring_problems,
}


def polling_problems(values):
    """Every ``*_retries`` and ``*_delay`` variable, whatever its role."""
    problems = Problems()
    for name, value in values.items():
        if name.endswith("_retries"):
            problems.check_int(name, value, *RETRIES_RANGE)
        elif name.endswith("_delay"):
            problems.check_int(name, value, *DELAY_RANGE)
    return problems


def role_problems(role, specs, values, deployment=None):
    """Problems of one role's variables: argument spec, polling knobs, then its rules.

    ``specs`` is the ``options`` of the role's ``main`` entry point; ``values``
    holds the value of every option that could be resolved (inventory, extra
    vars or role default); options left out are not checked (a default that
    reads a later stage's facts is not known yet). ``deployment`` holds the
    deployment variables, which every role's rules see whether its spec
    declares them or not (the volcano role's reads trainium_kubernetes_version,
    the device plugins' trainium_node_pools).
    """
    problems = Problems()
    checked = {}
    refused = set()
    for name, spec in specs.items():
        if name in DEPLOYMENT_VARIABLES or name not in values:
            continue
        before = len(problems)
        checked[name] = check_option(problems, name, spec, values[name])
        if len(problems) > before:
            refused.add(name)
    # The rules see the converted values and the deployment variables; a
    # variable its spec refused already gets no second line from them.
    context = {name: value for name, value in (deployment or {}).items() if name in DEPLOYMENT_VARIABLES}
    context.update({name: values[name] for name in DEPLOYMENT_VARIABLES if name in values})
    context.update(checked)
    more = list(polling_problems(checked)) + list(ROLE_RULES.get(role, _no_rules)(context))
    problems.extend(line for line in more if line.split(":", 1)[0].split("[", 1)[0] not in refused)
    return list(problems)


def validation_problems(deployment, roles):
    """Every problem of a run: the deployment variables once, then each role's.

    ``roles`` is a list of ``(role, spec_options, values)``; ``spec_options``
    is None for a name that is not a role of the collection. A role without
    cross-field rules (not in ``ROLE_RULES``) is checked against its spec.
    """
    lines = list(deployment_errors(deployment))
    for role, specs, values in roles:
        if specs is None:
            lines.append(f"validate_variables roles: got {describe(role)}; allowed: a role of trainium.eks (roles/<name>/meta/argument_specs.yml)")
            continue
        lines.extend(role_problems(role, specs, values, deployment))
    return unique(lines)


# ---------------------------------------------------------------------------
# Undeclared variables: a name with the prefix of a role of this collection or
# ``trainium_`` that nothing declares is a misspelling (the run would go on
# with the default and say nothing).

DEPLOYMENT_PREFIX = "trainium_"
# Inputs of the collection's playbooks that no role's argument spec declares;
# each one's playbook checks its value.
PLAYBOOK_VARIABLES = {
    "trainium_overlap_stages": "site.yml sets it: the infrastructure stage starts the image and the file system in the background",
    "trainium_scale_nodes": "playbooks/scale.yml: the new node count of the job's pool",
    "trainium_status_dir": "playbooks/status.yml: where the status page is written",
    "trainium_validate_roles": "playbooks/validate.yml: the roles whose variables the validation pass checks (default: every stage's)",
    "trainium_node_check_remediate": "the platform stage's node check: cordon and taint the nodes that lost devices",
}
# Facts the collection sets itself: given as input they would shadow what it
# computes (extra variables win over facts).
COLLECTION_FACTS = ("trainium_deployment",)


def _owner(name, role_prefixes):
    """The role whose prefix ``name`` carries (the longest: ``fsx_lustre_`` before ``fsx_``), or None."""
    owners = [role for role in role_prefixes if name.startswith(role + "_")]
    return max(owners, key=len) if owners else None


def undeclared_problems(names, declared, roles, ignored=()):
    """One line per name of ``names`` that carries a prefix of this collection and that nothing declares.

    ``declared``: every variable of every role's argument specs, the
    deployment variables, :data:`PLAYBOOK_VARIABLES` and the survey's;
    ``roles``: the collection's role names (their prefixes ``<role>_``);
    ``ignored``: names the user says belong to something else
    (``trainium_other_variables``). Names with no such prefix (other
    collections', Ansible's own) are left alone. The closest declared name,
    among those of the same role first, is suggested; values are never
    printed (a misspelled secret stays unprinted).
    """
    declared = set(declared) | set(PLAYBOOK_VARIABLES) | set(SURVEY_VARIABLES)
    candidates = declared - set(COLLECTION_FACTS)
    lines = []
    for name in sorted(set(names)):
        if name in ignored or (name in declared and name not in COLLECTION_FACTS):
            continue
        role = _owner(name, roles)
        if role is None and not name.startswith(DEPLOYMENT_PREFIX):
            continue
        if name in COLLECTION_FACTS:
            lines.append(f"{name}: set by the validation pass, not an input; remove it from the inventory and the extra variables")
            continue
        prefix = role + "_" if role else DEPLOYMENT_PREFIX
        # Within the family the shared prefix says nothing: what follows it is compared.
        family = {candidate[len(prefix):]: candidate for candidate in candidates if candidate.startswith(prefix)}
        match = [family[rest] for rest in difflib.get_close_matches(name[len(prefix):], sorted(family), n=1, cutoff=0.6)]
        # Another role's variable (training_job_image for training_image_...): the whole name, closely.
        others = sorted(candidates - set(family.values()))
        match = match or difflib.get_close_matches(name, others, n=1, cutoff=0.85)
        where = f"role {role}'s variables are in roles/{role}/README.md" if role else "the deployment variables are in docs/variables.md"
        hint = f"did you mean {match[0]}?" if match else f"{where} (a name of something else: list it in trainium_other_variables)"
        lines.append(f"{name}: not a variable of this collection; {hint}")
    return lines
