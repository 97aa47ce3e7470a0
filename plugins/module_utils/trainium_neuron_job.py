# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""What trainium.eks.neuron_job renders and decides, and the Kubernetes calls it makes.

The Volcano Job is the one TorchX 0.7.0's ``kubernetes`` scheduler renders for
the ``trn1_dist_ddp`` component of aws-neuron-eks-samples, field for field
(tests/golden/neuron_job, made by tools/torchx/generate_golden.py), written
here without TorchX. Our additions on top of it, and nothing else, are listed
in ``ADDITIONS``.

Rendering and the status summary are pure functions of plain dicts (the JSON
of the Kubernetes API), unit tested without a cluster; ``KubeJobApi`` makes the
calls with the kubernetes client and parses the JSON as is.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shlex
import time

from ansible_collections.trainium.eks.plugins.module_utils import trainium_kube as kube
from ansible_collections.trainium.eks.plugins.module_utils import trainium_tracks as tracks
from ansible_collections.trainium.eks.plugins.module_utils.trainium_limits import TRAINIUM_TYPE_FACTS, lnc_choices, pool_lnc

GROUP, VERSION, PLURAL = "batch.volcano.sh", "v1alpha1", "jobs"
PG_GROUP, PG_VERSION, PG_PLURAL = "scheduling.volcano.sh", "v1beta1", "podgroups"
NEURON = "aws.amazon.com/neuron"
EFA = "vpc.amazonaws.com/efa"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
WORKLOAD_LABEL = "trainium.eks/workload"
SPEC_HASH = "trainium.eks/spec-hash"
FINGERPRINT = "trainium.eks/compile-fingerprint"
CACHE_CONFIGMAP = "trainium-eks-compile-cache"
# TorchX's names: the role of trn1_dist_ddp, the version its pod labels carry, its label keys.
ROLE = "role1"
TORCHX_VERSION = "0.7.0"
TORCHX_LABELS = ("torchx.pytorch.org/version", "torchx.pytorch.org/app-name", "torchx.pytorch.org/role-index",
                 "torchx.pytorch.org/role-name", "torchx.pytorch.org/replica-id")
VOLCANO_JOB_LABEL = "volcano.sh/job-name"
VOLCANO_TASK_LABEL = "volcano.sh/task-spec"
# The index of a pod within its task, a label Volcano puts on every pod it creates.
VOLCANO_INDEX_LABEL = "volcano.sh/task-index"
# The most a rendered Job may weigh (compact JSON). The API server stores a custom object in one etcd request:
# etcd's limit is 1.5 MiB (--max-request-bytes, EKS's too), kube-apiserver's gRPC client refuses more than 2 MiB.
# TorchX's shape, one task per node with a whole pod template each (about 2.3 KB), passes it at about 690 nodes;
# a larger Job is rendered compact: one task of nnodes replicas (COMPACT in ADDITIONS).
MAX_JOB_BYTES = 1024 * 1024
# The env variable of a compact Job's pods that carries the pod's replica (Volcano's task-index label).
REPLICA_ENV = "TRAINIUM_REPLICA"
# Each type's devices, EFA interfaces, vCPUs and memory (GiB), from the one table of Trainium facts.
NEURON_DEVICES = {itype: facts["devices"] for itype, facts in TRAINIUM_TYPE_FACTS.items()}
EFA_INTERFACES = {itype: facts["efa_interfaces"] for itype, facts in TRAINIUM_TYPE_FACTS.items()}
INSTANCE_SIZES = {itype: (facts["vcpus"], facts["memory_gib"]) for itype, facts in TRAINIUM_TYPE_FACTS.items()}
# What a worker pod leaves of its node for the kubelet and the daemonsets: 1/32 of the vCPUs (at least 1) and 1/8 of
# the memory (at least 6 GiB: a trn1.2xlarge keeps about 1.5 GiB for the kernel, 1 GiB for the kubelet at
# 58 pods). On a trn1.32xlarge that is 4 vCPUs and 64 GiB, against about 0.4 vCPU that the EKS AMI
# reserves for the kubelet (kube-reserved: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of the
# rest) and, of the memory, what the kernel and the hypervisor keep (a node reports a few percent less than the type's
# memory; Karpenter estimates 7.5%), kube-reserved (11 MiB per pod plus 255 MiB: about 3 GiB at 247 pods), the eviction
# threshold (100 MiB) and about 1 vCPU and 2 GiB the collection's daemonsets request.
NODE_SHARE_DIVISOR = (32, 8)
NODE_SHARE_MIN = (1, 6)
# What add_capabilities may add back: the capabilities Pod Security's baseline level admits (a namespace at baseline
# refuses a pod with any other; the job namespace is at baseline or restricted).
BASELINE_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                         "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
RDZV_BACKENDS = ("etcd", "etcd-v2", "c10d")
DEFAULT_RDZV_ENDPOINT = "etcd-server:2379"
C10D_PORT = 29500
# Arguments that change how long a run is, not what is compiled: left out of the precompile fingerprint.
RUN_LENGTH_ARGS = ("--steps_this_run", "--max_steps")
FINISHED_OK = ("Completed",)
FINISHED_BAD = ("Failed", "Aborted", "Terminated")
COMPACT = (
    "a Job that would weigh more than MAX_JOB_BYTES in TorchX's shape (one task per node) is rendered compact: one task "
    "role1 with replicas = nnodes and one pod template, Volcano naming the pods <job>-role1-<i> and labelling them "
    "volcano.sh/task-index=<i>; what TorchX writes per replica comes from that label: the env TRAINIUM_REPLICA "
    "(downward API) and the per-node cache directories as $(TRAINIUM_REPLICA); no torchx.pytorch.org/replica-id label "
    "and no TORCHX_RANK0_HOST (replica 0's only); the container is named role1; the c10d default endpoint is "
    "<job>-role1-0.<job>:29500"
)
ADDITIONS = (
    "the Job's name is the given name (TorchX appends a random suffix); --rdzv_id is <job name>-<8 hex of the spec hash>",
    "metadata.namespace, metadata.labels (the labels option and trainium.eks/workload) and the annotation "
    "trainium.eks/spec-hash on the Job",
    "spec.minAvailable = nnodes on the Job (the value Volcano's admission sets when it is missing)",
    "the pod label trainium.eks/workload (training or precompile); the labels option on the pods, over TorchX's own values",
    "resources.requests equal to resources.limits (the API server copies the limits of extended resources into requests), "
    "and cpu and memory in both (the options, else the instance type's less a share for the node: worker_resources): "
    "Guaranteed QoS",
    "with options only: tolerations, extra nodeSelector entries, extra env, serviceAccountName, priorityClassName",
    "no service account token (automountServiceAccountToken: false: torchrun never calls the API), no Service "
    "environment variables (enableServiceLinks: false), the RuntimeDefault seccomp profile and "
    "allowPrivilegeEscalation: false, capabilities drop ALL (add: the add_capabilities option) and, with "
    "read_only_root_filesystem (default), a read-only root filesystem with an emptyDir tmp at /tmp and the env HOME=/tmp "
    "after TorchX's variables (also with run_as_user) (the securityContext "
    "TorchX leaves empty); with run_as_user, runAsUser/runAsGroup and runAsNonRoot on the pod",
    "the env TRAINIUM_JOB_GROUP and TRAINIUM_JOB_VERSION (the pod's scheduling.k8s.io/group-name and volcano.sh/job-version "
    "annotations) and --rdzv_id '<id>'-\"${TRAINIUM_JOB_GROUP:-0}\"-\"v${TRAINIUM_JOB_VERSION:-0}\": one rendezvous per Job "
    "object and per attempt. A Volcano restart (RestartJob) runs the job again under a new version, and a Job created "
    "again with the same spec (a failed one replaced, a forced precompile) is a new object (its PodGroup is named "
    "<job>-<uid>); each needs a new rendezvous, because a finished or failed run closed its own in etcd for the 2 h "
    "its run keys live",
    COMPACT,
    "a '$' in the script's arguments is written '$$' (the kubelet expands $(NAME) in a command and makes '$$' one '$'): "
    "the arguments reach the script as given",
    "on the native track (framework native, TorchNeuron), which TorchX's component does not know: no XLA variables "
    "(XLA_TRANSFER_SEED_ASYNC, XLA_DOWNCAST_BF16), and after TRANSFORMERS_CACHE the env TRAINIUM_EKS_FRAMEWORK=native "
    "and, with bf16, NEURON_RT_STOCHASTIC_ROUNDING_EN=1 and TRAINIUM_EKS_BF16=1 (trainium_tracks.environment)",
)
# What the pods get on top of TorchX's rendering (ADDITIONS): no API token, no Service links, seccomp, no escalation.
POD_HARDENING = {"automountServiceAccountToken": False, "enableServiceLinks": False,
                 "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
# The writable /tmp of a read-only root filesystem (torchrun, the Neuron compiler's work directory, Python's tempfile).
TMP_VOLUME = {"emptyDir": {}, "name": "tmp"}
TMP_MOUNT = {"mountPath": "/tmp", "name": "tmp"}
# The env variable that carries the Volcano Job's version (one more per RestartJob) into the pod.
JOB_VERSION_ENV = "TRAINIUM_JOB_VERSION"
JOB_VERSION_ANNOTATION = "volcano.sh/job-version"
# ... and the Job object's PodGroup, <job>-<uid>: a Job created again with the same spec is another object.
JOB_GROUP_ENV = "TRAINIUM_JOB_GROUP"
JOB_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
# The rendezvous id after TorchX's quoted app id: one per Job object and attempt (ADDITIONS).
RDZV_SUFFIX = f"-\"${{{JOB_GROUP_ENV}:-0}}\"-\"v${{{JOB_VERSION_ENV}:-0}}\""
_CACHESET = re.compile(r"^[A-Za-z0-9_-]+$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class JobError(Exception):
    """A Kubernetes call failed; the message says which and why."""


def normalize_str(data):
    """A name as TorchX normalizes it: lower case, ``[a-z0-9-]`` only, no leading dash."""
    data = data[1:] if data.startswith("-") else data
    return "".join(re.findall(r"[a-z0-9\-]", data.lower()))


def job_name(params):
    """The Volcano Job's name: ``job_name``, else ``name`` (train) or ``<name>-precompile``."""
    if params.get("job_name"):
        return params["job_name"]
    return params["name"] + ("-precompile" if params.get("mode") == "precompile" else "")


def neuron_devices(params):
    if params.get("neuron_devices") is not None:
        return int(params["neuron_devices"])
    return NEURON_DEVICES.get(params.get("instance_type"))


def efa_interfaces(params):
    if params.get("efa_interfaces") is not None:
        return int(params["efa_interfaces"])
    return EFA_INTERFACES.get(params.get("instance_type"))


def worker_resources(params):
    """{cpu, memory} of one worker pod (limits = requests): the options, else the instance type's vCPUs and memory less
    the node's share (NODE_SHARE_DIVISOR, NODE_SHARE_MIN); {} on a type the module does not know without both options."""
    vcpus, gib = INSTANCE_SIZES.get(params.get("instance_type"), (None, None))
    out = {}
    if params.get("cpu"):
        out["cpu"] = str(params["cpu"])
    elif vcpus:
        out["cpu"] = str(vcpus - max(NODE_SHARE_MIN[0], vcpus // NODE_SHARE_DIVISOR[0]))
    if params.get("memory"):
        out["memory"] = str(params["memory"])
    elif gib:
        out["memory"] = f"{gib - max(NODE_SHARE_MIN[1], gib // NODE_SHARE_DIVISOR[1])}Gi"
    return out


def read_only_root(params):
    return params.get("read_only_root_filesystem", True) is not False


def logical_nc_config(params):
    """The LNC the job's pods run at, or None on a type that has only LNC 1 (trn1: nothing to set)."""
    itype = params.get("instance_type")
    if len(lnc_choices(itype)) < 2:
        return None
    return pool_lnc(params)


def rdzv_endpoint(params, compact=False):
    if params.get("rdzv_endpoint"):
        return params["rdzv_endpoint"]
    if params.get("rdzv_backend") == "c10d":
        name = job_name(params)
        # Rank 0's pod, by the hostname Volcano's svc plugin gives it: <job>-<task>-<index>.
        return f"{name}-{ROLE}-0.{name}:{C10D_PORT}" if compact else f"{name}-{ROLE}-0-0.{name}:{C10D_PORT}"
    return DEFAULT_RDZV_ENDPOINT


def problems(params):
    """One line per option value the module cannot render."""
    found = []
    name = job_name(params)
    if not _DNS_LABEL.match(name or "") or len(name) > 63 - len(f"-{ROLE}-99-0"):
        found.append(f"name: job name {name!r}; allowed: a DNS label (a-z, 0-9, -) short enough for its pod names")
    if not _CACHESET.match(params.get("cacheset") or ""):
        found.append(f"cacheset: got {params.get('cacheset')!r}; allowed: letters, digits, dashes and underscores")
    for option in ("nnodes", "nproc_per_node"):
        if params.get(option) is not None and int(params[option]) < 1:
            found.append(f"{option}: got {params[option]}; allowed: 1 or more")
    report = params.get("report_every")
    if report is not None and not 0 < float(report) <= 30:
        found.append(f"report_every: got {report}; allowed: more than 0 and at most 30 seconds")
    if params.get("state", "present") != "present":
        return found
    sizes = worker_resources(params)
    missing = [option for option, known in (("neuron_devices", neuron_devices(params) is not None),
                                            ("efa_interfaces", efa_interfaces(params) is not None),
                                            ("cpu", "cpu" in sizes), ("memory", "memory" in sizes)) if not known]
    if missing:
        found.append(f"instance_type: got {params.get('instance_type')!r} without {', '.join(missing)}; allowed: "
                     f"{', '.join(sorted(NEURON_DEVICES))}, or any type with these options set")
    lnc = params.get("logical_nc_config")
    if lnc is not None and int(lnc) not in lnc_choices(params.get("instance_type")):
        found.append(f"logical_nc_config: got {lnc} for {params.get('instance_type')}; allowed: "
                     f"{', '.join(map(str, lnc_choices(params.get('instance_type'))))} (Neuron: LNC 2 exists on Trainium2 and later)")
    if params.get("max_retry") is not None and int(params["max_retry"]) < 0:
        found.append(f"max_retry: got {params['max_retry']}; allowed: 0 or more")
    if params.get("mode") == "precompile" and not params.get("steps_this_run"):
        found.append("steps_this_run: not set with mode precompile; allowed: the number of steps the precompile run traces")
    framework = params.get("framework") or tracks.XLA
    if params.get("mode") == "precompile" and not tracks.precompiles(framework):
        found.append(f"mode: got 'precompile' with framework {framework!r}; allowed: train (neuron_parallel_compile is "
                     "PyTorch/XLA's tool; TorchNeuron compiles on first use)")
    found.extend(f"{name}: got {value!r}; allowed: {allowed}" for name, value, allowed in pod_option_problems(params))
    if params.get("progress_regex") is not None:
        try:
            re.compile(params["progress_regex"])
        except re.error as err:
            found.append(f"progress_regex: got {params['progress_regex']!r}; allowed: a Python regular expression ({err})")
    if params.get("env"):
        found.extend(f"env: {key!r} is not a valid variable name" for key in params["env"] if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(key)))
    return found


def pod_option_problems(values, prefix=""):
    """(name, value, allowed) of each bad worker pod option: cpu, memory, run_as_user, add_capabilities. The one place
    of these rules: neuron_job's own check, and the validation pass for the training_job role's variables (prefix
    ``training_job_``), before anything is created."""
    found = []
    for option in ("cpu", "memory"):
        value = values.get(prefix + option)
        if value and not _QUANTITY.match(str(value)):
            found.append((prefix + option, value, f"a Kubernetes quantity such as {'124 or 500m' if option == 'cpu' else '448Gi'}"))
    user = values.get(prefix + "run_as_user")
    if user not in (None, "") and (isinstance(user, bool) or not str(user).isdigit() or int(user) < 1):
        found.append((prefix + "run_as_user", user, "a user id of 1 or more (not root), or unset for the image's user"))
    found.extend((prefix + "add_capabilities", cap, f"{', '.join(BASELINE_CAPABILITIES)} (what Pod Security's baseline level admits; "
                  "no CAP_ prefix)") for cap in values.get(prefix + "add_capabilities") or [] if str(cap) not in BASELINE_CAPABILITIES)
    return found


def script_args(params):
    """The script's arguments as a list; precompile appends ``--steps_this_run <n>``."""
    args = [str(arg) for arg in params.get("script_args") or []]
    if params.get("mode") == "precompile":
        args += ["--steps_this_run", str(params["steps_this_run"])]
    return args


def launcher_line(params, rdzv_id, compact=False):
    """The shell line TorchX's component builds: the quoted launcher, then the script arguments."""
    words = ["python3", "-m", "torch.distributed.run", "--rdzv_backend", params.get("rdzv_backend") or "etcd",
             "--rdzv_endpoint", rdzv_endpoint(params, compact), "--rdzv_id", "${app_id}", "--nnodes", str(params["nnodes"]),
             "--nproc_per_node", str(params["nproc_per_node"]), "--tee", "3", "--role", "", params["script"]]
    # The component quotes its words with the app-id macro still in them, then TorchX substitutes it.
    line = " ".join(shlex.quote(word) for word in words).replace(
        shlex.quote("${app_id}"), f"'{rdzv_id}'{RDZV_SUFFIX}")
    # The kubelet expands $(NAME) in a command and makes "$$" one "$": written "$$", a "$" reaches the script as given.
    rest = shlex.join(script_args(params)).replace("$", "$$")
    return f"{line} {rest}"


def command(params, rdzv_id, compact=False):
    line = launcher_line(params, rdzv_id, compact)
    return ["neuron_parallel_compile", line] if params.get("mode") == "precompile" else ["bash", "-c", line]


def _join(*parts):
    return "/".join(part.strip("/") for part in parts if part).replace("//", "/")


def environment(params, replica):
    """The container's env, in TorchX's order, then the extra ``env`` (same name: replaced in place).

    ``replica`` None: the env of a compact Job's one template (COMPACT), the replica from Volcano's task-index label.
    """
    cache_root = params.get("cache_root") or _join(params.get("mount_path") or "/data", "neuron_cache")
    cacheset = params["cacheset"]
    compact = replica is None
    if compact:
        replica = f"$({REPLICA_ENV})"
    track_early, track_late = tracks.environment(params.get("framework") or tracks.XLA, params.get("bf16"))
    pairs = [
        ("CCOM_SOCKET_IFNAME", "eth0"),
        ("FI_EFA_USE_DEVICE_RDMA", "1"),
        ("FI_PROVIDER", "efa"),
        ("FI_EFA_FORK_SAFE", "1"),
        ("NEURON_RT_RESET_CORES", "1"),
        *((("NEURON_LOGICAL_NC_CONFIG", str(logical_nc_config(params))),) if logical_nc_config(params) else ()),
        *track_early,
        ("NEURON_CC_FLAGS", f"--cache_dir=/{_join(cache_root, f'{cacheset}_{replica}')}"),
        ("TRANSFORMERS_CACHE", f"/{_join(params.get('mount_path') or '/data', 'transformers_cache', f'{cacheset}_{replica}')}"),
        *track_late,
    ]
    if replica == 0:
        pairs.append(("TORCHX_RANK0_HOST", "localhost"))
    if read_only_root(params) or params.get("run_as_user") is not None:
        # The image's home (/root) is read-only, or not the user's: what writes under ~ (caches) writes to /tmp.
        pairs.append(("HOME", "/tmp"))
    env = dict(pairs)
    for key, value in (params.get("env") or {}).items():
        env[str(key)] = str(value)
    downward = [{"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}}}
                for name, annotation in ((JOB_GROUP_ENV, JOB_GROUP_ANNOTATION), (JOB_VERSION_ENV, JOB_VERSION_ANNOTATION))]
    if compact:
        # Before the variables that use it: the kubelet expands $(NAME) only from the ones above.
        downward.insert(0, {"name": REPLICA_ENV, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{VOLCANO_INDEX_LABEL}']"}}})
        return downward[:1] + [{"name": key, "value": value} for key, value in env.items()] + downward[1:]
    return [{"name": key, "value": value} for key, value in env.items()] + downward


def workload(params):
    return "precompile" if params.get("mode") == "precompile" else "training"


def pod_template(params, name, replica, rdzv_id):
    """The pod template of one replica's task; ``replica`` None: the one template of a compact Job (COMPACT)."""
    task = ROLE if replica is None else f"{ROLE}-{replica}"
    limits = {NEURON: str(neuron_devices(params))}
    if efa_interfaces(params):
        limits[EFA] = str(efa_interfaces(params))
    limits.update(worker_resources(params))
    security = copy.deepcopy(CONTAINER_SECURITY)
    if params.get("add_capabilities"):
        security["capabilities"]["add"] = [str(cap) for cap in params["add_capabilities"]]
    if read_only_root(params):
        security["readOnlyRootFilesystem"] = True
    labels = {
        "torchx.pytorch.org/version": TORCHX_VERSION,
        "torchx.pytorch.org/app-name": params["name"],
        "torchx.pytorch.org/role-index": "0",
        "torchx.pytorch.org/role-name": ROLE,
        "torchx.pytorch.org/replica-id": str(replica),  # left out of a compact Job's template (below)
        "app.kubernetes.io/name": params["name"],
        "app.kubernetes.io/managed-by": "torchx.pytorch.org",
        "app.kubernetes.io/instance": name,
    }
    if replica is None:
        del labels["torchx.pytorch.org/replica-id"]
    labels.update({str(k): str(v) for k, v in (params.get("labels") or {}).items()})
    labels[WORKLOAD_LABEL] = workload(params)
    node_selector = {INSTANCE_TYPE_LABEL: params["instance_type"]}
    node_selector.update({str(k): str(v) for k, v in (params.get("node_selector") or {}).items()})
    spec = {
        "containers": [{
            "command": command(params, rdzv_id, compact=replica is None),
            "env": environment(params, replica),
            "image": params["image"],
            "name": task,
            "ports": [],
            "resources": {"limits": limits, "requests": dict(limits)},
            "securityContext": security,
            "volumeMounts": [
                {"mountPath": "/dev/shm", "name": "dshm"},
                {"mountPath": params.get("mount_path") or "/data", "name": "mount-0", "readOnly": False},
            ],
        }],
        "nodeSelector": node_selector,
        "restartPolicy": "Never",
        "volumes": [
            {"emptyDir": {"medium": "Memory"}, "name": "dshm"},
            {"name": "mount-0", "persistentVolumeClaim": {"claimName": params.get("claim_name") or "fsx-claim"}},
        ],
    }
    spec.update(copy.deepcopy(POD_HARDENING))
    if read_only_root(params):
        spec["containers"][0]["volumeMounts"].append(dict(TMP_MOUNT))
        spec["volumes"].append(copy.deepcopy(TMP_VOLUME))
    if params.get("run_as_user") is not None:
        spec["securityContext"].update({"runAsNonRoot": True, "runAsUser": int(params["run_as_user"]),
                                        "runAsGroup": int(params["run_as_user"])})
    if params.get("service_account_name"):
        spec["serviceAccountName"] = params["service_account_name"]
    if params.get("tolerations"):
        spec["tolerations"] = copy.deepcopy(params["tolerations"])
    return {"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}, "labels": labels}, "spec": spec}


def render(params):
    """The Volcano Job for ``params`` (module options), with its spec-hash annotation and its rdzv_id filled in."""
    name = job_name(params)
    max_retry = int(params["max_retry"] if params.get("max_retry") is not None else 3)
    placeholder = "@@rdzv_id@@"

    def build(rdzv_id, compact=False):
        tasks = []
        shapes = [(None, int(params["nnodes"]), ROLE)] if compact else [(r, 1, f"{ROLE}-{r}") for r in range(int(params["nnodes"]))]
        for replica, replicas, task_name in shapes:
            task = {"replicas": replicas, "name": task_name, "template": pod_template(params, name, replica, rdzv_id)}
            if max_retry > 0:
                task["maxRetry"] = max_retry
                task["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "RestartJob"}]
            tasks.append(task)
        spec = {"schedulerName": "volcano", "queue": params["queue"], "tasks": tasks, "maxRetry": max_retry,
                "plugins": {"svc": ["--publish-not-ready-addresses"], "env": []}, "minAvailable": int(params["nnodes"])}
        if params.get("priority_class_name"):
            spec["priorityClassName"] = params["priority_class_name"]
        labels = {str(k): str(v) for k, v in (params.get("labels") or {}).items()}
        labels[WORKLOAD_LABEL] = workload(params)
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Job",
                "metadata": {"name": name, "namespace": params["namespace"], "labels": labels}, "spec": spec}

    # TorchX's shape unless it is too heavy for the API server to store (MAX_JOB_BYTES, COMPACT).
    compact = len(json.dumps(build(placeholder), separators=(",", ":"))) > MAX_JOB_BYTES
    digest = spec_hash(build(placeholder, compact))
    job = build(f"{name}-{digest[:8]}", compact)
    job["metadata"]["annotations"] = {SPEC_HASH: digest}
    if params.get("mode") == "precompile":
        job["metadata"]["annotations"][FINGERPRINT] = fingerprint(params)
    return job


def spec_hash(job):
    """sha256 of the rendered Job's name, labels and spec (canonical JSON)."""
    body = {"metadata": {key: job["metadata"].get(key) for key in ("name", "namespace", "labels")}, "spec": job["spec"]}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def strip_run_length(args):
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in RUN_LENGTH_ARGS:
            skip = True
            continue
        if any(arg.startswith(f"{flag}=") for flag in RUN_LENGTH_ARGS):
            continue
        out.append(arg)
    return out


def fingerprint(params):
    """What the compile cache of a precompile run depends on: image, script, its arguments without the run-length ones,
    nodes, processes per node, bf16 and the instance type (sha256, 16 hex)."""
    body = {"image": params["image"], "script": params["script"],
            "script_args": strip_run_length([str(arg) for arg in params.get("script_args") or []]),
            "nnodes": int(params["nnodes"]), "nproc_per_node": int(params["nproc_per_node"]), "bf16": bool(params.get("bf16")),
            "instance_type": params["instance_type"]}
    if logical_nc_config(params):
        body["logical_nc_config"] = logical_nc_config(params)
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------- status


def _phase(job):
    return ((job or {}).get("status") or {}).get("state", {}).get("phase") or ("Pending" if job else None)


def _alive(pod):
    return not (pod.get("metadata") or {}).get("deletionTimestamp")


def replica_of(pod):
    """TorchX's replica-id label, the index in the task's name (role1-<i>), or Volcano's task-index (a compact Job)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get("torchx.pytorch.org/replica-id", "").isdigit():
        return int(labels["torchx.pytorch.org/replica-id"])
    match = re.search(r"-(\d+)$", labels.get(VOLCANO_TASK_LABEL, ""))
    if match:
        return int(match.group(1))
    return int(labels[VOLCANO_INDEX_LABEL]) if labels.get(VOLCANO_INDEX_LABEL, "").isdigit() else None


def gang_size(job):
    """The Job's pods: the replicas of all its tasks (one per task in TorchX's shape, nnodes in a compact Job)."""
    return sum(int(task.get("replicas") or 1) for task in ((job or {}).get("spec") or {}).get("tasks") or [])


def pod_counts(pods):
    counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "terminating": 0}
    for pod in pods:
        if not _alive(pod):
            counts["terminating"] += 1
            continue
        phase = ((pod.get("status") or {}).get("phase") or "Pending").lower()
        counts[phase if phase in counts else "pending"] += 1
    return counts


def _condition_message(conditions, kind, status):
    for condition in conditions or []:
        if condition.get("type") == kind and condition.get("status") == status and condition.get("message"):
            return condition["message"]
    return None


def _fits(message):
    """Whether a scheduler message gives the node-fit reasons (``0/4 nodes are unavailable: 2 Insufficient ...``)."""
    return bool(message) and ("nodes are unavailable" in message or "Insufficient" in message)


def shortfall(job, nodes):
    """What the cluster lacks for the whole gang, from the Job's pod template and the nodes of its instance type:
    ``Insufficient aws.amazon.com/neuron: the gang of 3 asks 48, the 2 trn1.32xlarge node(s) have 32``; None when enough."""
    tasks = ((job or {}).get("spec") or {}).get("tasks") or []
    if not tasks or nodes is None:
        return None
    pod = tasks[0]["template"]["spec"]
    selector = pod.get("nodeSelector") or {}
    matching = [n for n in nodes if all(((n.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in selector.items())
                and not (n.get("spec") or {}).get("unschedulable")]
    limits = (pod["containers"][0].get("resources") or {}).get("limits") or {}
    kind = selector.get(INSTANCE_TYPE_LABEL, "matching")
    found = []
    for resource in (NEURON, EFA):
        if resource not in limits:
            continue
        asked = int(limits[resource]) * gang_size(job)
        have = sum(int(str(((n.get("status") or {}).get("allocatable") or {}).get(resource, 0))) for n in matching)
        if asked > have:
            found.append(f"Insufficient {resource}: the gang of {gang_size(job)} pod(s) asks {asked}, "
                         f"the {len(matching)} schedulable {kind} node(s) have {have}")
    return "; ".join(found) or None


def pending_reason(pods, podgroups, events, short=None):
    """The scheduler's reason why the job's pods do not run: a Pending pod's PodScheduled=False message (node fit reasons),
    else the PodGroup's Unschedulable condition and the queue's events (a gang Volcano did not enqueue) with what the
    cluster lacks (``short``); None when there is none."""
    fits, gang = [], []
    for pod in pods:
        if _alive(pod) and ((pod.get("status") or {}).get("phase") or "Pending") == "Pending":
            message = _condition_message((pod.get("status") or {}).get("conditions"), "PodScheduled", "False")
            if message:
                (fits if _fits(message) else gang).append(message)
    for group in podgroups:
        status = group.get("status") or {}
        if status.get("phase") in ("Running", "Completed"):
            continue
        message = _condition_message(status.get("conditions"), "Unschedulable", "True")
        if message:
            (fits if _fits(message) else gang).append(message)
    for event in sorted(events, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "", reverse=True):
        message = event.get("message") or ""
        if event.get("reason") in ("Unschedulable", "FailedScheduling", "PodGroupPending") or event.get("type") == "Warning":
            if _fits(message):
                fits.append(message)
            elif "queue" in message.lower() or "unschedulable" in message.lower():
                gang.append(message)
    if fits:
        return fits[0].strip()
    parts = []
    for message in gang + [short]:
        if message and message.strip() not in parts:
            parts.append(message.strip())
    return "; ".join(parts) or None


def failed_pods(pods):
    """The failed pods, each with its name, exit code, reason and message (first failed first)."""
    found = []
    for pod in pods:
        status = pod.get("status") or {}
        terminated = [((cs.get("state") or {}).get("terminated") or {}) for cs in status.get("containerStatuses") or []]
        bad = [t for t in terminated if t and t.get("exitCode") not in (None, 0)]
        if status.get("phase") == "Failed" or bad:
            first = (bad or terminated or [{}])[0]
            found.append({"name": pod["metadata"]["name"], "exit_code": first.get("exitCode"),
                          "reason": first.get("reason") or status.get("reason"),
                          "message": first.get("message") or status.get("message"),
                          "finished": first.get("finishedAt") or ""})
    return sorted(found, key=lambda f: f["finished"])


# A progress line is matched and shown at this length at most: a pod's line (a printed tensor, a JSON blob) can be
# megabytes, and a pattern such as ".*loss.*" takes time in proportion to its square.
PROGRESS_LINE_MAX = 2048
# Terminal control characters (C0 but tab, DEL, C1): a pod's line is printed on the controller's terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def last_log_line(text, containing="", pattern=None):
    """The last rank-0 ``LOG ...`` line of a log tail (that also contains ``containing``); with ``pattern`` (a
    workload's progress_regex), the last line the pattern finds anything in (its first PROGRESS_LINE_MAX characters),
    from where the match starts (torchrun's --tee prefix, "[default0]:", goes). Without terminal control characters."""
    for line in reversed((text or "").splitlines()):
        if pattern is not None:
            line = line[:PROGRESS_LINE_MAX]
            found = re.search(pattern, line)
            if found:
                return _CONTROL.sub("", line[found.start():]).strip()
        elif "LOG " in line and containing in line:
            return _CONTROL.sub("", line[line.index("LOG "):]).strip()
    return None


def rank0(pods):
    """The newest live pod of replica 0."""
    zero = [pod for pod in pods if replica_of(pod) == 0 and _alive(pod)]
    return max(zero, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", default=None)


# How many pods' log tails one status reads to find the rank-0 LOG line.
LOG_SEARCH_PODS = 16


def log_candidates(pods):
    """The live pods whose log may hold the rank-0 LOG line, replica 0 first.

    torchrun's etcd rendezvous gives node rank 0 to whichever agent arrives first, so the global rank 0
    worker (the one that prints LOG lines) can be in any pod; replica 0 is the likeliest.
    """
    live = [pod for pod in pods if _alive(pod) and ((pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed"))]
    newest = sorted(live, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "", reverse=True)
    return sorted(newest, key=lambda p: replica_of(p) != 0)[:LOG_SEARCH_PODS]


def summarize(job, pods, podgroups, events, nodes=None):
    """The status part of the result, from the Job, its pods, PodGroups, events and the nodes (no log lines yet)."""
    spec = (job or {}).get("spec") or {}
    status = (job or {}).get("status") or {}
    phase = _phase(job)
    counts = pod_counts(pods)
    failed = failed_pods(pods)
    restarts = any(policy.get("action") == "RestartJob" for task in spec.get("tasks") or [] for policy in task.get("policies") or []) \
        or any(policy.get("action") == "RestartJob" for policy in spec.get("policies") or [])
    retry_count = int(status.get("retryCount") or 0)
    max_retry = int(spec.get("maxRetry") or 0)
    waiting = job is not None and (counts["pending"] or phase == "Pending")
    summary = {
        "exists": job is not None,
        "phase": phase,
        "pods": counts,
        "nnodes": gang_size(job),
        "retry_count": retry_count,
        "max_retry": max_retry,
        "pending_reason": pending_reason(pods, podgroups, events, shortfall(job, nodes)) if waiting else None,
        "failed_pods": failed,
        # A failed pod that no retry will replace: the job can no longer finish.
        "failed_for_good": phase in FINISHED_BAD or bool(failed and (not restarts or retry_count >= max_retry)
                                                         and phase not in ("Restarting",) + FINISHED_OK),
        "done": phase in FINISHED_OK,
    }
    return summary


# ----------------------------------------------------------------------------------------------- Kubernetes


class KubeJobApi:
    """The Kubernetes calls of the module, through a kubernetes ApiClient."""

    def __init__(self, api_client):
        from kubernetes.client import CoreV1Api, CustomObjectsApi  # pylint: disable=import-outside-toplevel

        self.core = CoreV1Api(api_client)
        self.custom = CustomObjectsApi(api_client)

    @staticmethod
    def _call(what, call, *args, missing_ok=False, **kwargs):
        return kube.call_json(what, call, *args, missing_ok=missing_ok, error=JobError, **kwargs)

    def get_job(self, namespace, name):
        return self._call(f"get Volcano Job {namespace}/{name}", self.custom.get_namespaced_custom_object, GROUP, VERSION, namespace,
                          PLURAL, name, missing_ok=True)

    def create_job(self, namespace, body):
        return self._call(f"create Volcano Job {namespace}/{body['metadata']['name']}", self.custom.create_namespaced_custom_object,
                          GROUP, VERSION, namespace, PLURAL, body)

    def delete_job(self, namespace, name, propagation):
        return self._call(f"delete Volcano Job {namespace}/{name}", self.custom.delete_namespaced_custom_object, GROUP, VERSION,
                          namespace, PLURAL, name, propagation_policy=propagation, missing_ok=True)

    def pods(self, namespace, name):
        answer = self._call(f"list pods of {namespace}/{name}", self.core.list_namespaced_pod, namespace,
                            label_selector=f"{VOLCANO_JOB_LABEL}={name}")
        return answer.get("items") or []

    def podgroups(self, namespace, name):
        answer = self._call(f"list PodGroups in {namespace}", self.custom.list_namespaced_custom_object, PG_GROUP, PG_VERSION,
                            namespace, PG_PLURAL, missing_ok=True) or {}
        return [group for group in answer.get("items") or []
                if any(ref.get("name") == name and ref.get("kind") == "Job" for ref in (group.get("metadata") or {}).get("ownerReferences") or [])]

    def events(self, namespace, names):
        answer = self._call(f"list events in {namespace}", self.core.list_namespaced_event, namespace, missing_ok=True) or {}
        return [event for event in answer.get("items") or [] if (event.get("involvedObject") or {}).get("name") in names]

    def nodes(self, label_selector):
        """The nodes with these labels; None when the caller may not list nodes."""
        try:
            return self._call("list nodes", self.core.list_node, label_selector=label_selector).get("items") or []
        except JobError:
            return None

    def log(self, namespace, pod, lines):
        """(text, None) or (None, ``log unavailable: <reason>``)."""
        try:
            answer = self.core.read_namespaced_pod_log(pod, namespace, tail_lines=lines, _preload_content=False)
            return answer.data.decode("utf-8", "replace"), None
        except Exception as e:  # pylint: disable=broad-except
            return None, f"log unavailable: {kube.reason(e)}"

    def get_configmap(self, namespace, name):
        return self._call(f"get ConfigMap {namespace}/{name}", self.core.read_namespaced_config_map, name, namespace, missing_ok=True)

    def put_configmap_key(self, namespace, name, key, value, labels):
        if self.get_configmap(namespace, name) is None:
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace, "labels": labels},
                    "data": {key: value}}
            return self._call(f"create ConfigMap {namespace}/{name}", self.core.create_namespaced_config_map, namespace, body)
        return self._call(f"patch ConfigMap {namespace}/{name}", self.core.patch_namespaced_config_map, name, namespace,
                          {"data": {key: value}})


# ----------------------------------------------------------------------------------------------- actions


def wait_gone(api, namespace, name, timeout, sleep=None, clock=None):
    """Wait until the Job and its pods are gone; JobError after ``timeout`` seconds."""
    sleep, clock = sleep or time.sleep, clock or time.monotonic
    started = clock()
    while True:
        job = api.get_job(namespace, name)
        pods = api.pods(namespace, name) if job is None else [None]
        if job is None and not pods:
            return round(clock() - started, 1)
        if clock() - started > timeout:
            left = "the Job" if job is not None else f"{len(pods)} pod(s)"
            raise JobError(f"Volcano Job {namespace}/{name}: {left} still there {int(timeout)} s after the delete")
        sleep(1)


def cache_record(api, params):
    """(record dict, or None) of the params' cacheset in the compile-cache ConfigMap."""
    configmap = api.get_configmap(params["namespace"], CACHE_CONFIGMAP)
    raw = ((configmap or {}).get("data") or {}).get(params["cacheset"])
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def write_cache_record(api, params, job):
    record = {"fingerprint": fingerprint(params), "job": job["metadata"]["name"], "image": params["image"],
              "instance_type": params["instance_type"], "nnodes": int(params["nnodes"]), "nproc_per_node": int(params["nproc_per_node"]),
              "bf16": bool(params.get("bf16")), "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    labels = {str(k): str(v) for k, v in (params.get("labels") or {}).items() if not str(k).startswith("trainium.eks/workload")}
    api.put_configmap_key(params["namespace"], CACHE_CONFIGMAP, params["cacheset"], json.dumps(record, sort_keys=True), labels)
    return record


def status(api, params, check_mode=False, job=None):
    """The status part of the result for the params' Job, with the rank-0 LOG line and the failed pod's log tail; in
    precompile mode, records the cache set when the Job is Completed."""
    namespace, name = params["namespace"], job_name(params)
    job = job if job is not None else api.get_job(namespace, name)
    if job is None:
        return {"exists": False, "phase": None, "pods": pod_counts([]), "pending_reason": None, "failed_pods": [],
                "failed_for_good": False, "done": False, "retry_count": 0, "max_retry": 0, "nnodes": 0,
                "last_log": None, "last_step_log": None, "log_error": None}
    pods = api.pods(namespace, name)
    groups = api.podgroups(namespace, name)
    names = {name} | {(g.get("metadata") or {}).get("name") for g in groups} | {(p.get("metadata") or {}).get("name") for p in pods}
    events = api.events(namespace, names) if any(((p.get("status") or {}).get("phase") or "Pending") == "Pending" for p in pods) \
        or _phase(job) == "Pending" else []
    waiting = _phase(job) == "Pending" or any(((p.get("status") or {}).get("phase") or "Pending") == "Pending" for p in pods)
    selector = ((((job.get("spec") or {}).get("tasks") or [{}])[0].get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    nodes = api.nodes(",".join(f"{k}={v}" for k, v in sorted(selector.items()))) if waiting else None
    summary = summarize(job, pods, groups, events, nodes)
    summary["last_log"], summary["last_step_log"], summary["log_error"] = None, None, None
    for pod in log_candidates(pods):
        text, error = api.log(namespace, pod["metadata"]["name"], max(int(params.get("log_lines") or 20), 200))
        summary["log_error"] = summary["log_error"] or error
        pattern = params.get("progress_regex")
        line = last_log_line(text, pattern=pattern)
        if line:
            # The last step's figures, also when the run has logged its end after them.
            step_line = line if pattern is not None else last_log_line(text, " step_loss ")
            summary["last_log"], summary["last_step_log"], summary["log_error"] = line, step_line, None
            break
    if summary["failed_pods"]:
        summary["failed_pods"] = _cause_first(api, namespace, summary["failed_pods"], int(params.get("log_lines") or 20))
    if params.get("mode") == "precompile" and summary["done"] and params.get("image") and params.get("script"):
        record = cache_record(api, params)
        summary["cache_recorded"] = bool(record and record.get("fingerprint") == fingerprint(params))
        if not summary["cache_recorded"] and not check_mode:
            write_cache_record(api, params, job)
            summary["cache_recorded"] = True
            summary["cache_record_written"] = True
    return summary


# What torchrun's agent raises when another node's agent closed the rendezvous: a
# consequence of that node's failure, not a cause.
FOLLOW_ON_FAILURES = ("RendezvousClosedError",)
# How many failed pods' logs a status reads to find the one that failed first.
CAUSE_SEARCH_PODS = 3


def _cause_first(api, namespace, failed, lines):
    """The failed pods with the log tail of the one that shows the cause first.

    Pods that failed within the same second are in no telling order; a pod whose
    agent only saw the rendezvous closed by another failed because of it.
    """
    for pod in failed[:CAUSE_SEARCH_PODS]:
        text, error = api.log(namespace, pod["name"], lines)
        pod["log"] = text.splitlines()[-lines:] if text is not None else []
        pod["log_error"] = error
        if not any(marker in line for line in pod["log"] for marker in FOLLOW_ON_FAILURES):
            return [pod] + [other for other in failed if other is not pod]
    return failed


def present(api, params, check_mode=False, delete_timeout=300):
    """Create the Job, leave it (same spec hash), or replace it (another hash). Returns the module result."""
    namespace, name = params["namespace"], job_name(params)
    manifest = render(params)
    digest = manifest["metadata"]["annotations"][SPEC_HASH]
    result = {"changed": False, "job": {"name": name, "namespace": namespace}, "spec_hash": digest, "manifest": manifest}
    if params.get("mode") == "precompile":
        record = cache_record(api, params)
        result["fingerprint"] = fingerprint(params)
        if record and record.get("fingerprint") == result["fingerprint"]:
            result.update(would="nothing", skipped_precompile=True,
                          msg=f"precompile skipped: the compile cache set {params['cacheset']} is complete (ConfigMap {CACHE_CONFIGMAP} "
                              f"records fingerprint {record['fingerprint']} of Job {record.get('job')}, Completed, recorded "
                              f"{record.get('recorded_at')})")
            return result
    existing = api.get_job(namespace, name)
    # A Job that failed for good is run again on the next run (its checkpoints let it resume); any other phase stays.
    if existing is not None and _phase(existing) in FINISHED_BAD:
        result["replaced_failed"] = _phase(existing)
    elif existing is not None and ((existing.get("metadata") or {}).get("annotations") or {}).get(SPEC_HASH) == digest:
        result.update(would="nothing", msg=f"Volcano Job {namespace}/{name} is up to date ({_phase(existing)})")
        result["status"] = status(api, params, check_mode, job=existing)
        return result
    result["would"] = "create" if existing is None else "replace"
    if check_mode:
        result.update(changed=True, msg=f"check mode: would {result['would']} Volcano Job {namespace}/{name}")
        return result
    if existing is not None:
        api.delete_job(namespace, name, "Foreground")
        wait_gone(api, namespace, name, delete_timeout)
    api.create_job(namespace, manifest)
    result.update(changed=True, msg=f"{'created' if existing is None else 'replaced'} Volcano Job {namespace}/{name}")
    return result


def absent(api, params, check_mode=False, delete_timeout=300):
    namespace, name = params["namespace"], job_name(params)
    existing = api.get_job(namespace, name)
    result = {"changed": existing is not None, "job": {"name": name, "namespace": namespace},
              "would": "delete" if existing is not None else "nothing"}
    if existing is None or check_mode:
        return result
    api.delete_job(namespace, name, params.get("propagation_policy") or "Foreground")
    result["waited"] = wait_gone(api, namespace, name, delete_timeout)
    result["msg"] = f"deleted Volcano Job {namespace}/{name}"
    return result
