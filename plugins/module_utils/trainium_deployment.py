# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Validation and placement rules for a trainium.eks deployment.

``deployment_errors`` checks the user-facing ``trainium_*`` variables without
calling AWS. ``place_node_pools`` decides the availability zone of every node
pool from the facts ``trainium_capacity_info`` returned, and ``job_fit_errors``
checks that the training job fits the pools. Every message names the
variable, the value it had and what is allowed.
"""

from __future__ import annotations

import os
import re

from ansible_collections.trainium.eks.plugins.module_utils import trainium_tracks as tracks
from ansible_collections.trainium.eks.plugins.module_utils.trainium_facts import USABLE_RESERVATION_STATES
from ansible_collections.trainium.eks.plugins.module_utils.trainium_limits import (  # noqa: F401 (INSTANCE_TYPE_RE, TRAINIUM_INSTANCE_TYPES: this module's API)
    CAPACITY_TYPES,
    EKS_LABEL_MAX,
    FSX_CAPACITY_RULE,
    FSX_DEPLOYMENT_TYPES,
    FSX_THROUGHPUTS,
    INSTANCE_TYPE_RE,
    KUBELET_LABEL_NAMESPACES,
    NODEGROUP_NAME_MAX,
    NODEGROUP_NAME_RULE,
    RESERVATION_CAPACITY_TYPES,
    TRAINIUM_INSTANCE_TYPES,
    default_lnc,
    fsx_capacity_ok,
    kubelet_refuses_label,
    lnc_choices,
    logical_neuron_cores,
    pool_lnc,
)
from ansible_collections.trainium.eks.plugins.module_utils.trainium_problems import Problems, is_int as _is_int

# The deployment variables: the one list every entry point (validation pass,
# preflight, teardown) reads from the inventory.
DEPLOYMENT_VARIABLES = (
    "trainium_cluster_name",
    "trainium_region",
    "trainium_aws_endpoint_url",
    "trainium_kubernetes_version",
    "trainium_node_pools",
    "trainium_storage",
    "trainium_image",
    "trainium_dataset",
    "trainium_job",
    "trainium_tags",
    "trainium_teardown_keep",
    "trainium_system_node_pool",
    "trainium_kubeconfig",
    "trainium_hourly_prices",
    "trainium_timeline_dir",
    "trainium_image_mirrors",
    "trainium_registry_ca_dir",
)
# What a teardown can leave in place (trainium_teardown_keep).
TEARDOWN_KEEPS = ("repository",)
MANAGED_BY = "trainium.eks"
CLUSTER_TAG = "trainium.eks/cluster"
POOL_LABEL = "trainium.eks/pool"
# The CPU node pool for the controllers (Volcano, etcd, CoreDNS, the CSI
# controller): its name, which no Trainium pool may take, and its defaults.
SYSTEM_POOL = "system"
SYSTEM_POOL_DEFAULTS = {"enabled": True, "instance_type": "m7i.large", "count": 2, "root_volume_size_gib": 50}
SYSTEM_POOL_MAX_NODES = 10
# Graviton (arm64) families: a generation digit followed by "g" (m7g, c6gn, r8gd, t4g, im4gn), and a1.
GRAVITON_TYPE_RE = re.compile(r"^([a-z]+[0-9]+g[a-z]*|a1)\.")
# EKS's versions in standard or extended support (1.36 on EKS since June 2026); the volcano role's rule refuses one its
# pinned Volcano release does not support (1.36 with Volcano v1.15, which supports up to 1.35).
KUBERNETES_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PRECISIONS = ("bf16", "fp32")
RDZV_BACKENDS = ("etcd", "etcd-v2", "c10d")
MODEL_CONFIGS = ("tiny", "base", "large")
JOB_WAIT_FOR = ("completed", "running")
SEQUENCE_LENGTHS = (128, 512)
MAX_POOLS = 10
MAX_NODES_PER_POOL = 100
# AWS allows 50 tags per resource; the collection sets three of its own.
MAX_USER_TAGS = 40
RESERVED_TAG_KEYS = (CLUSTER_TAG, "ManagedBy", "Name")

# The integer ranges of the deployment variables: the validation below and
# the AWX surveys (trainium_survey, playbooks/awx_setup.yml) both read them.
INT_RANGES = {
    "trainium_node_pools[].count": (0, MAX_NODES_PER_POOL),
    "trainium_job.nnodes": (1, MAX_NODES_PER_POOL * MAX_POOLS),
    "trainium_job.nproc_per_node": (1, 128),
    "trainium_job.batch_size": (1, 4096),
    "trainium_job.grad_accum_usteps": (1, 4096),
    "trainium_job.max_retry": (0, 10),
    "trainium_job.steps_this_run": (1, 10_000_000),
    "trainium_job.max_steps": (1, 10_000_000),
    "trainium_job.warmup_steps": (0, 10_000_000),
    "trainium_job.seed": (0, 2**31 - 1),
    "trainium_job.checkpoint_steps": (1, 10_000_000),
    "trainium_job.precompile_steps": (0, 1000),
}
# Lengths of the free-text deployment variables (their patterns allow no more).
TEXT_LENGTHS = {
    "trainium_cluster_name": (2, 40),
    "trainium_region": (9, 20),
}

CLUSTER_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,38}[A-Za-z0-9]$")
REGION_RE = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]$")
JOB_NAME_RE = re.compile(r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
# A Kubernetes object name such as a ServiceAccount's (RFC 1123 subdomain, at most 253 characters).
DNS_SUBDOMAIN_RE = re.compile(r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")
ZONE_NAME_RE = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$")
ZONE_ID_RE = re.compile(r"^[a-z]{3,5}[0-9]-az[0-9]+$")
RESERVATION_RE = re.compile(r"^cr-[0-9a-f]{8,17}$")
ECR_REPO_RE = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")
IMAGE_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
PINNED_IMAGE_RE = re.compile(r"^[a-z0-9.-]+(?::[0-9]+)?/[a-z0-9._/-]+(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")
ENDPOINT_RE = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$")
S3_URL_RE = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?$")
DATASET_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
LABEL_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def default_max_count(count):
    """The node group's maximum size when max_count is not set: count, and 1 for a parked pool (EKS needs maxSize >= 1)."""
    return max(count, 1) if isinstance(count, int) and not isinstance(count, bool) else count


def _validate_pool(errors, index, pool, seen_names, cluster):
    base = f"trainium_node_pools[{index}]"
    if not errors.check_mapping(base, pool):
        return
    name = pool.get("name")
    if errors.check_re(f"{base}.name", name, DNS_LABEL_RE, "a DNS label: 1-63 lowercase letters, digits and '-'"):
        if isinstance(cluster, str) and CLUSTER_NAME_RE.fullmatch(cluster) and len(f"{cluster}-{name}") > NODEGROUP_NAME_MAX:
            errors.add(f"{base}.name", name, f"{NODEGROUP_NAME_RULE}; with trainium_cluster_name {cluster!r} a pool name of at most "
                       f"{max(NODEGROUP_NAME_MAX - len(cluster) - 1, 0)} characters")
        if name == SYSTEM_POOL:
            errors.add(f"{base}.name", name, f"a name other than {SYSTEM_POOL!r} (the CPU node pool of trainium_system_node_pool)")
        elif name in seen_names:
            errors.add(f"{base}.name", name, "a name not used by another pool")
        seen_names.add(name)
    if errors.check_choice(f"{base}.instance_type", pool.get("instance_type"), TRAINIUM_INSTANCE_TYPES) and pool.get("logical_nc_config") is not None:
        itype, lnc = pool["instance_type"], pool["logical_nc_config"]
        allowed = lnc_choices(itype)
        if not _is_int(lnc) or lnc not in allowed:
            errors.add(f"{base}.logical_nc_config", lnc,
                       f"{' or '.join(map(str, allowed))} for {itype}, or unset for its default {default_lnc(itype)} "
                       "(Neuron documentation, 'Logical NeuronCore configuration': LNC 2 exists on Trainium2 and later)")
    count = pool.get("count")
    # 0 parks the pool: its node group stays, with no node (and nothing to pay for them).
    count_ok = errors.check_int(f"{base}.count", count, *INT_RANGES["trainium_node_pools[].count"])
    # Unset and null both mean "the same as count" (at least 1 for the maximum: EKS needs it).
    min_count = count if pool.get("min_count") is None else pool["min_count"]
    max_count = default_max_count(count) if pool.get("max_count") is None else pool["max_count"]
    if count_ok:
        errors.check_int(f"{base}.min_count", min_count, 0, count)
        errors.check_int(f"{base}.max_count", max_count, max(count, 1), MAX_NODES_PER_POOL)
    capacity_type = pool.get("capacity_type", "ON_DEMAND")
    errors.check_choice(f"{base}.capacity_type", capacity_type, CAPACITY_TYPES)
    reservation = pool.get("capacity_reservation_id")
    if reservation is not None:
        errors.check_re(f"{base}.capacity_reservation_id", reservation, RESERVATION_RE, "a capacity reservation id such as 'cr-0123456789abcdef0'")
        if capacity_type == "SPOT":
            errors.add(f"{base}.capacity_reservation_id", reservation, "no reservation when capacity_type is SPOT")
    elif capacity_type == "CAPACITY_BLOCK":
        errors.add(f"{base}.capacity_reservation_id", reservation, "the id of the capacity block when capacity_type is CAPACITY_BLOCK")
    zone = pool.get("availability_zone")
    if zone is not None and not (isinstance(zone, str) and (ZONE_NAME_RE.match(zone) or ZONE_ID_RE.match(zone))):
        errors.add(f"{base}.availability_zone", zone, "a zone name such as 'us-west-2d' or a zone id such as 'usw2-az4', or leave it unset")
    if "root_volume_size_gib" in pool:
        errors.check_int(f"{base}.root_volume_size_gib", pool["root_volume_size_gib"], 100, 16384)
    labels = pool.get("labels", {})
    if errors.check_mapping(f"{base}.labels", labels):
        for key, value in labels.items():
            _validate_label(errors, base, key, value)
    taints = pool.get("taints", [])
    if not isinstance(taints, list):
        errors.add(f"{base}.taints", taints, "a list of {key, value, effect}")
        return
    for t_index, taint in enumerate(taints):
        t_base = f"{base}.taints[{t_index}]"
        if errors.check_mapping(t_base, taint):
            key = taint.get("key")
            if errors.check_re(f"{t_base}.key", key, LABEL_KEY_RE, "a Kubernetes taint key") and len(key) > EKS_LABEL_MAX:
                errors.add(f"{t_base}.key", key, f"a taint key of at most {EKS_LABEL_MAX} characters, its prefix included (EKS CreateNodegroup, Taint)")
            if taint.get("value") is not None:
                errors.check_re(f"{t_base}.value", taint["value"], LABEL_VALUE_RE, "a Kubernetes taint value (63 characters at most), or leave it unset")
            errors.check_choice(f"{t_base}.effect", taint.get("effect"), TAINT_EFFECTS)


def _validate_label(errors, base, key, value):
    """One node label of a pool: Kubernetes' syntax, EKS's lengths, kubelet's reserved namespaces."""
    if errors.check_re(f"{base}.labels key", key, LABEL_KEY_RE, "a Kubernetes label key"):
        if len(key) > EKS_LABEL_MAX:
            errors.add(f"{base}.labels key", key, f"a label key of at most {EKS_LABEL_MAX} characters, its prefix included (EKS CreateNodegroup, labels)")
        elif kubelet_refuses_label(key):
            errors.add(f"{base}.labels key", key,
                       "a key outside the kubernetes.io and k8s.io namespaces, or under " + " or ".join(KUBELET_LABEL_NAMESPACES)
                       + " (kubelet refuses other keys there in --node-labels, and the nodes would never join)")
    if errors.check_re(
        f"{base}.labels[{key}]", value, LABEL_VALUE_RE,
        "a Kubernetes label value (63 characters at most, quoted if it looks like a number or boolean)",
    ) and value == "":
        errors.add(f"{base}.labels[{key}]", value, "a label value of 1-63 characters (EKS CreateNodegroup refuses an empty value)")


def _validate_storage(errors, storage):
    if not errors.check_mapping("trainium_storage", storage):
        return
    dtype = storage.get("deployment_type")
    type_ok = errors.check_choice("trainium_storage.deployment_type", dtype, FSX_DEPLOYMENT_TYPES)
    capacity = storage.get("storage_capacity_gib")
    if not fsx_capacity_ok(capacity):
        errors.add("trainium_storage.storage_capacity_gib", capacity, FSX_CAPACITY_RULE)
    throughput = storage.get("per_unit_storage_throughput")
    if type_ok:
        allowed = FSX_THROUGHPUTS[dtype]
        if allowed and (not _is_int(throughput) or throughput not in allowed):
            errors.add("trainium_storage.per_unit_storage_throughput", throughput, f"one of {', '.join(map(str, allowed))} (MB/s/TiB) for {dtype}")
        if not allowed and throughput is not None:
            errors.add("trainium_storage.per_unit_storage_throughput", throughput, f"unset (null) for {dtype}")
    repo = storage.get("data_repository_path")
    if repo is not None:
        errors.check_re("trainium_storage.data_repository_path", repo, S3_URL_RE, "an S3 URL such as 's3://bucket/prefix', or leave it unset")


def _validate_image(errors, image):
    if not errors.check_mapping("trainium_image", image):
        return
    errors.check_re(
        "trainium_image.repository", image.get("repository"), ECR_REPO_RE,
        "an ECR repository name: lowercase letters, digits, '.', '_', '-' and '/'",
    )
    tag = image.get("tag")
    if errors.check_re("trainium_image.tag", tag, IMAGE_TAG_RE, "an image tag of 1-128 letters, digits, '.', '_' and '-'") and tag == "latest":
        errors.add("trainium_image.tag", tag, "a version tag; 'latest' is not allowed because tags are immutable and pinned")
    base = image.get("base_image")
    # Unset: the training track's pinned image (_validate_track).
    if base is None or not errors.check_re("trainium_image.base_image", base, PINNED_IMAGE_RE,
                                           "a full image reference 'registry/name:tag' or '...@sha256:<digest>', or unset for the track's image"):
        return
    if ":" not in base.split("/")[-1] and "@sha256:" not in base or base.endswith(":latest"):
        errors.add("trainium_image.base_image", base, "an image pinned by a version tag or a digest, not 'latest' or no tag")


def _validate_track(errors, job, pools, image):
    """The job's training track against its pool's instance family, and the base image against the track
    (trainium_tracks: PyTorch/XLA's last training SDK is 2.29, TorchNeuron runs on trn2 and trn3)."""
    if not isinstance(job, dict):
        return
    framework = job.get("framework")
    if framework is not None and not errors.check_choice("trainium_job.framework", framework, tracks.FRAMEWORKS):
        return
    pool = next((p for p in pools if isinstance(p, dict) and p.get("name") == job.get("node_pool")), None)
    if pool is None or pool.get("instance_type") not in TRAINIUM_INSTANCE_TYPES:
        return
    if framework is not None:
        problem = tracks.framework_problem(framework, pool["instance_type"])
        if problem:
            errors.add("trainium_job.framework", framework, problem)
            return
    framework = tracks.job_framework(job, pools)
    if isinstance(job.get("workload"), dict) and job["workload"].get("image") is not None:
        return  # An image of the user's own: nothing is built on a base image.
    if not isinstance(image, dict) or not (image.get("base_image") is None or isinstance(image.get("base_image"), str)):
        return
    if image.get("base_image") is not None and not PINNED_IMAGE_RE.fullmatch(image["base_image"]):
        return
    problem = tracks.base_image_problem(framework, image)
    if problem:
        errors.add("trainium_image.base_image", image.get("base_image") or "", problem)


def _validate_dataset(errors, dataset):
    if not errors.check_mapping("trainium_dataset", dataset):
        return
    errors.check_re("trainium_dataset.name", dataset.get("name"), DATASET_NAME_RE, "a directory name of letters, digits, '.', '_' and '-'")
    source = dataset.get("source")
    if source != "synthetic":
        errors.check_re("trainium_dataset.source", source, S3_URL_RE, "'synthetic' or an S3 URL such as 's3://bucket/key.tar'")
    errors.check_choice("trainium_dataset.seq_len", dataset.get("seq_len"), SEQUENCE_LENGTHS)


def _validate_job(errors, job, pool_names):
    if not errors.check_mapping("trainium_job", job):
        return
    errors.check_re("trainium_job.name", job.get("name"), JOB_NAME_RE, "1-40 lowercase letters, digits and '-', starting with a letter")
    errors.check_re("trainium_job.namespace", job.get("namespace"), DNS_LABEL_RE, "a Kubernetes namespace name (DNS label)")
    errors.check_re("trainium_job.queue", job.get("queue"), DNS_LABEL_RE, "a Volcano queue name (DNS label)")
    if pool_names:
        errors.check_choice("trainium_job.node_pool", job.get("node_pool"), sorted(pool_names))
    for key in ("nnodes", "nproc_per_node", "batch_size", "grad_accum_usteps"):
        errors.check_int(f"trainium_job.{key}", job.get(key), *INT_RANGES[f"trainium_job.{key}"])
    errors.check_int("trainium_job.max_retry", job.get("max_retry", 3), *INT_RANGES["trainium_job.max_retry"])
    if "steps_this_run" in job and job["steps_this_run"] is not None:
        errors.check_int("trainium_job.steps_this_run", job["steps_this_run"], *INT_RANGES["trainium_job.steps_this_run"])
    errors.check_choice("trainium_job.precision", job.get("precision", "bf16"), PRECISIONS)
    errors.check_choice("trainium_job.rdzv_backend", job.get("rdzv_backend", "etcd"), RDZV_BACKENDS)
    _validate_workload(errors, job.get("workload"))
    _validate_job_run(errors, job)


# An image pinned by its digest (what a prebuilt workload image must be: the pods run images by digest).
DIGEST_IMAGE_RE = re.compile(r"^[a-z0-9.-]+(?::[0-9]+)?/[a-z0-9._/-]+(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?@sha256:[0-9a-f]{64}$")
# A workload script's path: plain characters only (it is written into the Containerfile's label and the command line).
WORKLOAD_SCRIPT_RE = re.compile(r"^[A-Za-z0-9._/-]{1,255}$")
# Build files the collection does not build from yet: a workload context is a script and its requirements.txt.
CONTAINERFILES = ("Containerfile", "Dockerfile")


def _context_problems(directory):
    """What a workload context may not hold, as (what, [paths relative to it]): symbolic links (the build would copy
    what they point to) and hidden files and directories (.git, .aws, .env: credentials go into no image)."""
    links, hidden = [], []
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.relpath(os.path.join(root, name), directory)
            if os.path.islink(os.path.join(root, name)):
                links.append(path)
            elif name.startswith("."):
                hidden.append(path)
        dirs[:] = [name for name in dirs if not name.startswith(".")]
    return [(what, sorted(paths)) for what, paths in (("symbolic links", links), ("hidden files or directories", hidden)) if paths]


def _validate_workload(errors, workload):
    """trainium_job.workload (docs/training.md, "Your own workload"): one source, a script that is there, a pattern that
    compiles. Reads the controller's files: the validation pass runs there."""
    base = "trainium_job.workload"
    if workload is None or not errors.check_mapping(base, workload):
        return
    context, image, script = workload.get("context"), workload.get("image"), workload.get("script")
    if isinstance(script, str) and not WORKLOAD_SCRIPT_RE.fullmatch(script):
        errors.add(f"{base}.script", script, "a path of letters, digits, '.', '_', '-' and '/' (it goes into the image's "
                   "label and the pods' command line)")
        script = None
    if (context is None) == (image is None):
        errors.add(base, sorted(key for key in ("context", "image") if workload.get(key) is not None),
                   "exactly one of context (a directory to build from) and image (an image pinned by digest)")
    elif image is not None:
        errors.check_re(f"{base}.image", image, DIGEST_IMAGE_RE, "an image pinned by digest, registry/name@sha256:<64 hex digits>")
        if isinstance(script, str) and not script.startswith("/"):
            errors.add(f"{base}.script", script, "the script's absolute path in trainium_job.workload.image")
    elif isinstance(context, str):
        directory = os.path.realpath(os.path.expanduser(context))
        home = os.path.realpath(os.path.expanduser("~"))
        too_wide = directory in ("/", home) or home.startswith(directory + os.sep)
        found = _context_problems(directory) if os.path.isdir(directory) and not too_wide else []
        if not os.path.isdir(directory):
            errors.add(f"{base}.context", context, "a directory on the controller with the script (and a requirements.txt)")
        elif any(os.path.exists(os.path.join(directory, name)) for name in CONTAINERFILES):
            errors.add(f"{base}.context", context, "a directory without a Containerfile or Dockerfile: the collection builds "
                       "the script and requirements.txt on the track's base image; an image of your own goes in workload.image")
        elif too_wide:
            errors.add(f"{base}.context", context, "a directory of the workload alone, not / or your home directory or above it "
                       "(every file of it goes into the image)")
        elif found:
            errors.add(f"{base}.context", context, "a directory without symbolic links or hidden files (every file of it goes into "
                       "the image: a link would take a file from elsewhere, and .git, .aws or .env hold credentials); found: "
                       + "; ".join(f"{what} {', '.join(paths[:3])}" for what, paths in found))
        elif isinstance(script, str):
            inside = os.path.realpath(os.path.join(directory, script))
            if script.startswith("/") or not inside.startswith(directory + os.sep) or not os.path.isfile(inside):
                errors.add(f"{base}.script", script, f"the path of a file inside {context} (relative to it)")
    pattern = workload.get("progress_regex")
    if pattern is not None:
        try:
            re.compile(pattern)
        except (re.error, TypeError) as err:
            errors.add(f"{base}.progress_regex", pattern, f"a Python regular expression ({err})")


def _validate_job_run(errors, job):
    """The run-length, schedule and compile-cache keys of ``trainium_job`` (all optional: the spec has defaults)."""
    if "model_config" in job:
        errors.check_choice("trainium_job.model_config", job["model_config"], MODEL_CONFIGS)
    max_steps = job.get("max_steps", 28125)
    max_ok = errors.check_int("trainium_job.max_steps", max_steps, *INT_RANGES["trainium_job.max_steps"])
    if "warmup_steps" in job and errors.check_int("trainium_job.warmup_steps", job["warmup_steps"], *INT_RANGES["trainium_job.warmup_steps"]):
        if max_ok and job["warmup_steps"] > max_steps:
            errors.add("trainium_job.warmup_steps", job["warmup_steps"], f"at most trainium_job.max_steps ({max_steps})")
    if "lr" in job:
        lr = job["lr"]
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr < 1:
            errors.add("trainium_job.lr", lr, "a learning rate above 0 and below 1, such as 0.0004")
    if "seed" in job:
        errors.check_int("trainium_job.seed", job["seed"], *INT_RANGES["trainium_job.seed"])
    if "checkpoint_steps" in job:
        errors.check_int("trainium_job.checkpoint_steps", job["checkpoint_steps"], *INT_RANGES["trainium_job.checkpoint_steps"])
    if "cacheset" in job:
        errors.check_re("trainium_job.cacheset", job["cacheset"], DNS_LABEL_RE, "a cache set name of lowercase letters, digits and '-'")
    if "precompile_steps" in job:
        errors.check_int("trainium_job.precompile_steps", job["precompile_steps"], *INT_RANGES["trainium_job.precompile_steps"])
    if "wait_for" in job:
        errors.check_choice("trainium_job.wait_for", job["wait_for"], JOB_WAIT_FOR)


def _validate_tags(errors, tags):
    if tags is None:
        return
    if not errors.check_mapping("trainium_tags", tags):
        return
    if len(tags) > MAX_USER_TAGS:
        errors.add("trainium_tags", f"{len(tags)} tags", f"at most {MAX_USER_TAGS} tags (AWS allows 50 per resource; the collection adds 3)")
    for key, value in tags.items():
        name = f"trainium_tags[{key!r}]"
        if not isinstance(key, str) or not 1 <= len(key) <= 128 or key.lower().startswith("aws:"):
            errors.add(name, key, "a key of 1-128 characters that does not start with 'aws:'")
        elif key in RESERVED_TAG_KEYS:
            errors.add(name, key, f"a key other than {', '.join(RESERVED_TAG_KEYS)} (the collection sets those itself)")
        if not isinstance(value, str) or len(value) > 256:
            errors.add(name, value, "a string of at most 256 characters")


def system_pool(value):
    """trainium_system_node_pool with its defaults applied (unset or null: the defaults)."""
    pool = dict(SYSTEM_POOL_DEFAULTS)
    pool.update({key: item for key, item in (value or {}).items() if item is not None} if isinstance(value, dict) else {})
    return pool


def _validate_system_pool(errors, value):
    if value is None:
        return
    if not errors.check_mapping("trainium_system_node_pool", value):
        return
    unknown = sorted(set(value) - set(SYSTEM_POOL_DEFAULTS))
    if unknown:
        errors.add("trainium_system_node_pool", ", ".join(map(str, unknown)), "the keys " + ", ".join(SYSTEM_POOL_DEFAULTS))
    pool = system_pool(value)
    if not isinstance(pool["enabled"], bool):
        errors.add("trainium_system_node_pool.enabled", pool["enabled"], "true or false")
    itype = pool["instance_type"]
    if errors.check_re("trainium_system_node_pool.instance_type", itype, INSTANCE_TYPE_RE, "an EC2 instance type such as 'm7i.large'"):
        if itype in TRAINIUM_INSTANCE_TYPES:
            errors.add("trainium_system_node_pool.instance_type", itype, "a CPU instance type such as 'm7i.large' (Trainium types go in trainium_node_pools)")
        elif GRAVITON_TYPE_RE.match(itype):
            errors.add("trainium_system_node_pool.instance_type", itype,
                       "an x86_64 instance type such as 'm7i.large' (the system pool runs the AL2023 x86_64 AMI; Graviton types are not supported)")
    errors.check_int("trainium_system_node_pool.count", pool["count"], 1, SYSTEM_POOL_MAX_NODES)
    errors.check_int("trainium_system_node_pool.root_volume_size_gib", pool["root_volume_size_gib"], 20, 16384)


def deployment_errors(variables):
    """Return every problem with the user-facing deployment variables.

    ``variables`` maps each ``trainium_*`` variable name to its value.
    """
    errors = Problems()
    errors.check_re(
        "trainium_cluster_name", variables.get("trainium_cluster_name"), CLUSTER_NAME_RE,
        "2-40 letters, digits and '-', starting with a letter and not ending with '-'",
    )
    errors.check_re("trainium_region", variables.get("trainium_region"), REGION_RE, "an AWS region name such as 'us-west-2'")
    endpoint = variables.get("trainium_aws_endpoint_url") or ""
    if endpoint:
        errors.check_re("trainium_aws_endpoint_url", endpoint, ENDPOINT_RE, "empty for AWS itself, or an http(s) URL such as 'http://127.0.0.1:5000'")
    version = variables.get("trainium_kubernetes_version")
    if isinstance(version, float):
        errors.add(
            "trainium_kubernetes_version", version,
            "a quoted string such as \"1.34\" (YAML reads 1.30 as the number 1.3); one of " + ", ".join(KUBERNETES_VERSIONS),
        )
    else:
        errors.check_choice("trainium_kubernetes_version", version, KUBERNETES_VERSIONS)

    pools = variables.get("trainium_node_pools")
    pool_names = set()
    if not isinstance(pools, list) or not 1 <= len(pools) <= MAX_POOLS:
        errors.add("trainium_node_pools", pools, f"a list of 1 to {MAX_POOLS} node pools")
    else:
        for index, pool in enumerate(pools):
            _validate_pool(errors, index, pool, pool_names, variables.get("trainium_cluster_name"))
    _validate_storage(errors, variables.get("trainium_storage"))
    _validate_image(errors, variables.get("trainium_image"))
    _validate_dataset(errors, variables.get("trainium_dataset"))
    _validate_job(errors, variables.get("trainium_job"), pool_names)
    _validate_track(errors, variables.get("trainium_job"), pools if isinstance(pools, list) else [], variables.get("trainium_image"))
    _validate_tags(errors, variables.get("trainium_tags"))
    _validate_system_pool(errors, variables.get("trainium_system_node_pool"))
    kubeconfig = variables.get("trainium_kubeconfig")
    if kubeconfig is not None and not (isinstance(kubeconfig, str) and kubeconfig.strip()):
        errors.add("trainium_kubeconfig", kubeconfig, "the path of the cluster's kubeconfig, or leave it unset for ~/.kube/<trainium_cluster_name>.yaml")
    keep = variables.get("trainium_teardown_keep")
    if keep is not None and not isinstance(keep, list):
        errors.add("trainium_teardown_keep", keep, "a list of what a teardown keeps: " + ", ".join(TEARDOWN_KEEPS))
    for index, item in enumerate(keep if isinstance(keep, list) else []):
        if item not in TEARDOWN_KEEPS:
            errors.add(f"trainium_teardown_keep[{index}]", item, "one of " + ", ".join(TEARDOWN_KEEPS)
                       + " (the file system's data is kept by its final backup, fsx_lustre_final_backup)")
    _validate_run_output(errors, variables.get("trainium_hourly_prices"), variables.get("trainium_timeline_dir"))
    _validate_image_sources(errors, variables.get("trainium_image_mirrors"), variables.get("trainium_registry_ca_dir"))
    return list(errors)


# A registry host (with a port), or "*" for every registry; a mirror: host[:port][/path].
REGISTRY_HOST_RE = re.compile(r"^(\*|[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?)$")
MIRROR_RE = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$")


def _validate_image_sources(errors, mirrors, ca_dir):
    """Where the platform images' digests are read (trainium.eks.image_digest) and the CAs of those registries."""
    if mirrors is not None and not isinstance(mirrors, dict):
        errors.add("trainium_image_mirrors", mirrors, "a mapping of registry host (or *) to a mirror host[:port][/path], such as "
                   "{public.ecr.aws: 111122223333.dkr.ecr.us-west-2.amazonaws.com/ecr-public}")
    for host, mirror in (mirrors.items() if isinstance(mirrors, dict) else ()):
        if not REGISTRY_HOST_RE.match(str(host)):
            errors.add(f"trainium_image_mirrors key {host}", host, "a registry host such as public.ecr.aws or quay.io, or * for every registry")
        elif not (isinstance(mirror, str) and MIRROR_RE.match(mirror)):
            errors.add(f"trainium_image_mirrors.{host}", mirror, "a registry host[:port] and optional path, such as "
                       "111122223333.dkr.ecr.us-west-2.amazonaws.com/ecr-public (no scheme: HTTPS always)")
    if ca_dir and not (isinstance(ca_dir, str) and ca_dir.startswith(("/", "~"))):
        errors.add("trainium_registry_ca_dir", ca_dir, "empty (the system's CAs) or an absolute path or one under ~ to a directory of *.crt CA files")


def _validate_run_output(errors, prices, timeline_dir):
    """The summary's own prices (instance type: USD per hour) and where the run timelines go."""
    if prices is not None:
        if not isinstance(prices, dict):
            errors.add("trainium_hourly_prices", prices, "a mapping of instance type to its price in USD per hour, such as {trn1.32xlarge: 21.50}")
        for itype, price in (prices.items() if isinstance(prices, dict) else ()):
            if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
                errors.add(f"trainium_hourly_prices.{itype}", price, "a price in USD per instance-hour, a number of 0 or more")
    if timeline_dir is not None and not (isinstance(timeline_dir, str) and timeline_dir.startswith(("/", "~"))):
        errors.add("trainium_timeline_dir", timeline_dir,
                   "an absolute path or one under ~ (the run timelines go there), or leave it unset for ~/.cache/trainium-eks/runs/<trainium_cluster_name>")


def _zone_matches(zone, wanted):
    return wanted in (zone["name"], zone["id"])


def _place_pool(errors, index, pool, capacity, region, preferred):
    base = f"trainium_node_pools[{index}]"
    itype = pool["instance_type"]
    info = capacity["instance_types"].get(itype) or {"offered": False, "availability_zones": [], "availability_zone_ids": []}
    zones = [{"name": n, "id": i} for n, i in zip(info["availability_zones"], info["availability_zone_ids"])]
    if not zones:
        elsewhere = info.get("offered_in")
        where = (f"; it is offered in {', '.join(elsewhere)} (set trainium_region to one of them)" if elsewhere
                 else "; no region offers it" if elsewhere == [] else "")
        errors.add(f"{base}.instance_type", itype,
                   f"an instance type that some availability zone of {region} offers; no zone of {region} offers {itype}{where}")
        return None
    candidates = zones
    reservation_id = pool.get("capacity_reservation_id")
    reservation = None
    if reservation_id:
        reservation = next((r for r in capacity.get("capacity_reservations", []) if r["id"] == reservation_id), None)
        if reservation is None:
            errors.add(f"{base}.capacity_reservation_id", reservation_id, f"a capacity reservation that exists in {region}; none with this id was found")
            return None
        if reservation["instance_type"] != itype:
            errors.add(f"{base}.capacity_reservation_id", reservation_id, f"a reservation for {itype}; this one holds {reservation['instance_type']}")
            return None
        if reservation["state"] not in USABLE_RESERVATION_STATES:
            errors.add(
                f"{base}.capacity_reservation_id", reservation_id,
                f"a reservation in state {' or '.join(USABLE_RESERVATION_STATES)}; this one is {reservation['state']}",
            )
            return None
        if reservation["state"] == "scheduled":
            # EKS User Guide, "Create a managed node group with Capacity Blocks for ML": instances launch only while the
            # block is active; before its start a node group at its count would fail its launches and go DEGRADED.
            errors.add(f"{base}.capacity_reservation_id", reservation_id,
                       f"a reservation that has started; {reservation_id} is scheduled and starts at "
                       f"{reservation.get('start_date') or 'its start date'}: run again once it is active")
            return None
        needed = RESERVATION_CAPACITY_TYPES.get(reservation.get("reservation_type") or "default")
        capacity_type = pool.get("capacity_type") or "ON_DEMAND"
        if needed and capacity_type != needed:
            kind = "a Capacity Block for ML" if needed == "CAPACITY_BLOCK" else "an On-Demand Capacity Reservation"
            errors.add(f"{base}.capacity_type", capacity_type,
                       f"{needed}, since {reservation_id} is {kind} (EKS User Guide: a node group on a Capacity Block has capacity type "
                       "CAPACITY_BLOCK and a launch template of market type capacity-block; on an On-Demand Capacity Reservation, ON_DEMAND)")
            return None
        held = reservation["total_instance_count"]
        for key in ("count", "max_count"):
            # A node group may not grow past what its reservation holds either.
            if pool.get(key) is not None and pool[key] > held:
                errors.add(f"{base}.{key}", pool[key], f"at most {held}, the number of instances reservation {reservation_id} holds")
                return None
        candidates = [z for z in zones if z["name"] == reservation["availability_zone"]]
        if not candidates:
            errors.add(
                f"{base}.capacity_reservation_id", reservation_id,
                f"a reservation in a zone that offers {itype}; it is in {reservation['availability_zone']}",
            )
            return None
    wanted = pool.get("availability_zone")
    if wanted:
        pinned = [z for z in candidates if _zone_matches(z, wanted)]
        if not pinned:
            where = ", ".join(f"{z['name']} ({z['id']})" for z in candidates)
            errors.add(f"{base}.availability_zone", wanted, f"a zone that offers {itype}{' and holds the reservation' if reservation else ''}: {where}")
            return None
        candidates = pinned
    chosen = next((z for z in candidates if z["name"] in preferred), candidates[0])
    placed = dict(pool)
    placed.update(
        {
            "capacity_type": pool.get("capacity_type") or "ON_DEMAND",
            "capacity_reservation_id": reservation_id,
            "availability_zone": chosen["name"],
            "availability_zone_id": chosen["id"],
            "offered_availability_zones": [z["name"] for z in zones],
            # What one node of the pool advertises and runs ranks on: logical NeuronCores at the pool's LNC.
            "neuron_cores": logical_neuron_cores(info.get("neuron_cores"), pool_lnc(pool)),
        }
    )
    return placed


def place_node_pools(pools, capacity, region):
    """Choose the availability zone of every pool.

    A reservation fixes the zone; an explicit ``availability_zone`` (name or
    id) must be one that offers the type; otherwise the first offering zone
    (by name) wins, preferring a zone an earlier pool already uses so pools
    stay together. Returns ``{"node_pools": [...], "cluster_availability_zones":
    [...], "errors": [...]}``; EKS wants two zones, so the cluster zones add
    the next available zone of the region when all pools share one.
    """
    errors = Problems()
    placed = []
    preferred = []
    for index, pool in enumerate(pools):
        placement = _place_pool(errors, index, pool, capacity, region, preferred)
        if placement:
            placed.append(placement)
            if placement["availability_zone"] not in preferred:
                preferred.append(placement["availability_zone"])
    cluster_zones = list(preferred)
    for zone in capacity.get("availability_zones", []):
        if len(cluster_zones) >= 2:
            break
        if zone.get("state", "available") == "available" and zone["zone_name"] not in cluster_zones:
            cluster_zones.append(zone["zone_name"])
    if placed and len(cluster_zones) < 2:
        errors.add("trainium_region", region, "a region with at least two available zones (EKS needs two)")
    for line in quota_errors(pools, capacity, region):
        errors.append(line)
    return {"node_pools": placed, "cluster_availability_zones": cluster_zones, "errors": list(errors)}


def quota_errors(pools, capacity, region):
    """One line per purchase option whose pools need more vCPUs than the EC2 quota leaves.

    Pools launched into a capacity reservation or Capacity Block are not
    counted (the reservation holds their capacity); nor is anything when
    ``capacity`` has no ``vcpu_quotas`` or a quota could not be read.
    """
    quotas = capacity.get("vcpu_quotas") or {}
    lines = []
    for option in ("ON_DEMAND", "SPOT"):
        quota = quotas.get(option)
        wanted = [pool for pool in pools if pool.get("capacity_type", "ON_DEMAND") == option
                  and not pool.get("capacity_reservation_id") and _is_int(pool.get("count")) and pool["count"] > 0]
        if quota is None or not wanted:
            continue
        sizes = {pool["instance_type"]: capacity["instance_types"].get(pool["instance_type"], {}).get("vcpus", 0) for pool in wanted}
        need = sum(pool["count"] * sizes[pool["instance_type"]] for pool in wanted)
        left = quota["value"] - quota["used_by_others"]
        if need <= left:
            continue
        what = " + ".join(f"{pool['count']} x {pool['instance_type']}" for pool in wanted)
        lines.append(
            f"trainium_node_pools: got {what} {option} = {need} vCPUs; allowed: at most {max(left, 0)} vCPUs, the EC2 quota "
            f"'{quota['name']}' ({quota['code']}) of {quota['value']} vCPUs in {region} minus {quota['used_by_others']} used by "
            f"other Trainium instances; ask for more: aws service-quotas request-service-quota-increase --service-code ec2 "
            f"--quota-code {quota['code']} --desired-value {need + quota['used_by_others']} --region {region}"
        )
    return lines


def job_fit_errors(job, pools, capacity):
    """Check that ``nnodes x nproc_per_node`` fits the pool the job runs on."""
    errors = Problems()
    pool = next((p for p in pools if p["name"] == job["node_pool"]), None)
    if pool is None:
        return list(errors)
    if pool["count"] == 0:
        # A parked pool: the job cannot run until count is raised again, but the pool may be parked.
        return list(errors)
    info = capacity["instance_types"].get(pool["instance_type"], {})
    lnc = pool_lnc(pool)
    cores = logical_neuron_cores(info.get("neuron_cores", 0), lnc)
    if job["nnodes"] > pool["count"]:
        errors.add("trainium_job.nnodes", job["nnodes"], f"at most {pool['count']}, the node count of pool {pool['name']!r}")
    if cores and job["nproc_per_node"] > cores:
        errors.add(
            "trainium_job.nproc_per_node", job["nproc_per_node"],
            f"at most {cores}, the NeuronCores of one {pool['instance_type']} in pool {pool['name']!r}"
            + (f" ({info.get('neuron_cores')} physical cores at logical_nc_config {lnc})" if lnc > 1 else ""),
        )
    return list(errors)


def resource_names(cluster):
    """The name of every cluster-wide resource the collection creates (one place to spell them)."""
    return {
        "cluster_role": f"{cluster}-cluster",
        "node_role": f"{cluster}-node",
        "vpc_cni_role": f"{cluster}-vpc-cni",
        "kms_alias": f"{cluster}-eks-secrets",
        "node_security_group": f"{cluster}-nodes",
        "lustre_security_group": f"{cluster}-lustre",
        "file_system": f"{cluster}-data",
        "vpc": f"{cluster}-vpc",
        "internet_gateway": f"{cluster}-igw",
        "public_route_table": f"{cluster}-public",
        "log_group": f"/aws/eks/{cluster}/cluster",
    }


def base_tags(cluster, extra_tags=None):
    """The tags of every AWS resource: the user's trainium_tags, then the collection's own."""
    tags = dict(extra_tags or {})
    tags.update({CLUSTER_TAG: cluster, "ManagedBy": MANAGED_BY})
    return tags


def normalize_pool(pool, cluster, tags):
    """A node pool with every default applied, its resource name, labels and tags.

    The argument spec defaults (capacity type, root volume, labels, taints)
    are applied before this by the validation pass; here come the defaults
    that depend on other fields (min and max size follow ``count``).
    """
    resource_name = f"{cluster}-{pool['name']}"
    normalized = dict(pool)
    normalized.update(
        {
            "resource_name": resource_name,
            "capacity_type": pool.get("capacity_type") or "ON_DEMAND",
            "capacity_reservation_id": pool.get("capacity_reservation_id") or None,
            "availability_zone": pool.get("availability_zone") or None,
            "logical_nc_config": pool_lnc(pool),
            # The node AMI's LNC for the type: the launch template writes the pool's into the node's config when it differs.
            "logical_nc_config_default": default_lnc(pool["instance_type"]),
            "min_count": pool["count"] if pool.get("min_count") is None else pool["min_count"],
            "max_count": default_max_count(pool["count"]) if pool.get("max_count") is None else pool["max_count"],
            "parked": pool["count"] == 0,
            "labels": dict(pool.get("labels") or {}, **{POOL_LABEL: pool["name"]}),
            "taints": list(pool.get("taints") or []),
            "tags": dict(tags, Name=resource_name),
        }
    )
    return normalized


def normalize_system_pool(value, cluster, tags):
    """The system node pool with its defaults, resource name, labels and tags (enabled false: still named, for teardown)."""
    pool = system_pool(value)
    resource_name = f"{cluster}-{SYSTEM_POOL}"
    pool.update(
        {
            "name": SYSTEM_POOL,
            "resource_name": resource_name,
            "min_count": pool["count"],
            "max_count": pool["count"],
            "labels": {POOL_LABEL: SYSTEM_POOL},
            "tags": dict(tags, Name=resource_name),
        }
    )
    return pool


def deployment_model(variables):
    """The normalized deployment: names, tags and node pools with their defaults, from the variables alone.

    Needs no AWS call, so teardown can use it as well as preflight (which adds
    the zones). ``variables`` must have passed :func:`deployment_errors`.
    """
    cluster = variables["trainium_cluster_name"]
    tags = base_tags(cluster, variables.get("trainium_tags"))
    framework = tracks.job_framework(variables["trainium_job"], variables["trainium_node_pools"])
    return {
        "cluster_name": cluster,
        "region": variables["trainium_region"],
        "endpoint_url": variables.get("trainium_aws_endpoint_url") or None,
        "kubernetes_version": variables["trainium_kubernetes_version"],
        "tags": tags,
        "names": resource_names(cluster),
        "node_pools": [normalize_pool(pool, cluster, tags) for pool in variables["trainium_node_pools"]],
        "system_node_pool": normalize_system_pool(variables.get("trainium_system_node_pool"), cluster, tags),
        # Where the eks_cluster role writes the kubeconfig and the platform roles read it.
        "kubeconfig": variables.get("trainium_kubeconfig") or f"~/.kube/{cluster}.yaml",
        "storage": dict(variables["trainium_storage"]),
        # The base image and the training track resolved: the given ones, else the track's and the family's.
        "image": dict(variables["trainium_image"], base_image=tracks.base_image(framework, variables["trainium_image"])),
        "dataset": dict(variables["trainium_dataset"]),
        "job": dict({"rdzv_backend": "etcd", "max_retry": 3, "precision": "bf16"}, **{**variables["trainium_job"], "framework": framework}),
        # Where the platform images' digests are read (trainium.eks.image_digest).
        "image_mirrors": dict(variables.get("trainium_image_mirrors") or {}),
        "registry_ca_dir": variables.get("trainium_registry_ca_dir") or None,
    }
