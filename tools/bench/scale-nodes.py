# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal with 1,000 fake trn1.32xlarge nodes: a 1,000-node job to Running, then status.yml (issue 12).

    .venv/bin/python tools/bench/scale-nodes.py [--nodes 1000] [--keep] [--state DIR]

Starts a private rehearsal stack (its own state directory, .cache/bench/scale
by default, and its own free ports from 31000 up, so that the shared stack on
the default ports is never touched) with the services the job needs: moto,
etcd, the EKS token authenticator, kube-apiserver/controller-manager/scheduler,
kwok and Volcano. No pod runner: 1,000 pods must not run real processes on a
small machine, so the job's pods stay kwok's fakes, which kwok's stages move
to Running; no registry (nothing pulls the image) and no rendezvous etcd
(nothing runs torchrun).

Then, timing each step:

1. nodes.py makes the kwok nodes of a benchmark inventory (generated into the
   state directory from inventories/local: cluster trn-scale, 10 pools of 100
   trn1.32xlarge, the most a pool may hold, in one zone), kwok makes them
   Ready and the node lifecycle controller takes off their not-ready taint
   (until then no scheduler places a pod there);
2. the collection's own playbooks make the cluster (infrastructure.yml
   --tags network,eks_cluster: the EKS cluster in the private moto, the
   kubeconfig with the collection's k8s-aws-v1 token) and adopt Volcano with
   its queue (platform.yml --tags volcano);
3. the fsx-claim the job mounts: a static PersistentVolume of the FSx CSI
   driver (fsx.csi.aws.com) and its claim, and one CSINode per node listing
   that driver, which is what the kubelet registers once the driver's node
   plugin runs there (the pod runner does it in the normal rehearsal; the
   FSx file system itself is not made, nothing mounts it);
4. trainium.eks.neuron_job (state present, wait_for running, through
   ansible-playbook) launches the Job of --nodes pods, one per node, 32
   processes each (a Job this large is rendered compact, one task of 1,000
   replicas: TorchX's one task per node would not fit in one etcd request),
   and waits until every pod is Running: the seconds from the launch to the
   module's return, and from the Job's creation to the last pod's Ready
   condition, with the last pod created and the first and last bound (the
   API's timestamps, 1 s resolution);
5. playbooks/status.yml -i <benchmark inventory>: its seconds.

It prints a table with those seconds (target: Running in 120 s or less), the
peak resident memory (VmHWM) of the stack's daemons, writes the same as
result.json in the state directory, and always takes the private stack down
(also on failure or Ctrl-C) and checks that none of its ports is left open.
--keep leaves the stack up (take it down with the command it prints).
Logs of every step are in <state>/logs/.

The 1,000-node job runs on all ten pools through the instance type's
nodeSelector; the inventory's own trainium_job stays within one pool (the
deployment's validation lets a job use one pool of at most 100 nodes), so the
benchmark calls the module with nnodes 1000 itself.
"""

from __future__ import annotations

import argparse
import shlex
import datetime
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import yaml

# Marks a state directory as this script's (the next run may remove it).
MARKER = ".scale-nodes-state"
ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = pathlib.Path(os.environ.get("VENV", ROOT / ".venv"))
REHEARSAL = ROOT / "tools" / "rehearsal" / "rehearsal.sh"
SERVICES = "moto etcd authenticator kube kwok volcano"
# Every port the services read; each gets a free one of the private stack.
PORT_VARIABLES = (
    "TRAINIUM_MOTO_PORT", "TRAINIUM_KUBE_ETCD_PORT", "TRAINIUM_KUBE_ETCD_PEER_PORT", "TRAINIUM_AUTHENTICATOR_PORT",
    "TRAINIUM_KUBE_API_PORT", "TRAINIUM_KUBE_CM_PORT", "TRAINIUM_KUBE_SCHED_PORT", "TRAINIUM_KWOK_PORT",
    "TRAINIUM_VOLCANO_SCHED_HEALTH_PORT", "TRAINIUM_VOLCANO_CM_HEALTH_PORT",
    # Not started here; set anyway so that nothing of this stack can fall back to a shared default.
    "TRAINIUM_RDZV_PORT", "TRAINIUM_RDZV_PEER_PORT", "TRAINIUM_REGISTRY_PORT",
)
CLUSTER = "trn-scale"
POOL_SIZE = 100  # MAX_NODES_PER_POOL of the deployment's validation
NAMESPACE = "training"
JOB = "bert-pretrain"
FSX_DRIVER = "fsx.csi.aws.com"
TARGET_RUNNING = 120.0
NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
DAEMONS = ("kube-apiserver", "etcd-kube", "vc-scheduler", "vc-controller-manager", "kwok", "kube-controller-manager", "moto")


def say(message):
    print(f"[scale] {message}", flush=True)


def free_ports(count, start=31000, stop=32700):
    """``count`` loopback ports nothing listens on, below the ephemeral range."""
    found = []
    for port in range(start, stop):
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        found.append(port)
        if len(found) == count:
            return found
    sys.exit(f"scale-nodes: fewer than {count} free ports in {start}-{stop}")


def port_open(port):
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class Stack:
    """The private rehearsal stack: its environment, up, down."""

    def __init__(self, state, nodes):
        self.state = state
        self.logs = state / "logs"
        ports = free_ports(len(PORT_VARIABLES))
        self.ports = dict(zip(PORT_VARIABLES, ports))
        self.env = dict(os.environ, TRAINIUM_REHEARSAL_DIR=str(state), TRAINIUM_REHEARSAL_SERVICES=SERVICES,
                        # The up inventory: nodes.py runs on every `up`; the benchmark's 1,000 come after, timed.
                        TRAINIUM_REHEARSAL_INVENTORY=str(state / "inventory-up"),
                        # Room in the rehearsal's EC2 quota for the Trainium vCPUs of every node (128 each).
                        TRAINIUM_REHEARSAL_TRN_ON_DEMAND_VCPUS=str(max(nodes, 4) * 128),
                        **{k: str(v) for k, v in self.ports.items()})
        for key in ("KUBECONFIG", "TRAINIUM_AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL", "K8S_AUTH_KUBECONFIG"):
            self.env.pop(key, None)
        self.up_done = False

    def rehearsal(self, action, log):
        with open(self.logs / log, "w", encoding="utf-8") as out:
            return subprocess.run([str(REHEARSAL), action], env=self.env, stdout=out, stderr=subprocess.STDOUT, check=False).returncode

    def up(self):
        self.up_done = True
        if self.rehearsal("up", "up.log") != 0:
            raise RuntimeError(f"the private rehearsal did not come up; see {self.logs / 'up.log'}")
        # The stack's env.sh (endpoints, credentials, kubeconfig), on top of the ports.
        out = subprocess.run(["bash", "-c", f"source {shlex.quote(str(self.state / 'env.sh'))} && env -0"], env=self.env, capture_output=True,
                             check=True).stdout
        self.env = dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)
        self.env.update(PATH=f"{VENV / 'bin'}:{self.env.get('PATH', '')}", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
                        ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")

    def pids(self):
        found = {}
        for name in DAEMONS:
            pidfile = self.state / "run" / f"{name}.pid"
            if pidfile.exists():
                found[name] = pidfile.read_text().strip()
        return found

    def peak_memory_mib(self):
        """VmHWM (peak resident set) of each daemon, MiB."""
        peaks = {}
        for name, pid in self.pids().items():
            try:
                for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peaks[name] = round(int(line.split()[1]) / 1024)
            except OSError:
                continue
        return peaks

    def down(self):
        if not self.up_done:
            return True
        rc = self.rehearsal("down", "down.log")
        still = [f"{k}={v}" for k, v in self.ports.items() if port_open(v)]
        if rc != 0 or still:
            say(f"the private stack did not go down cleanly (rc {rc}, still open: {', '.join(still) or 'none'}); see {self.logs / 'down.log'}")
            return False
        say(f"private stack down; none of its {len(self.ports)} ports is open")
        return True


def write_inventory(state, nodes):
    """The benchmark inventory (from inventories/local) and the small one the stack comes up with."""
    source = ROOT / "inventories" / "local"
    pools = [{"name": f"trn1-{i:02d}", "instance_type": "trn1.32xlarge", "count": min(POOL_SIZE, nodes - i * POOL_SIZE),
              "capacity_type": "ON_DEMAND", "root_volume_size_gib": 500} for i in range((nodes + POOL_SIZE - 1) // POOL_SIZE)]
    for name, node_pools in (("inventory", pools), ("inventory-up", [dict(pools[0], count=1)])):
        target = state / name
        shutil.copytree(source, target, dirs_exist_ok=True)
        deployment = target / "group_vars" / "all" / "deployment.yml"
        variables = yaml.safe_load(deployment.read_text())
        variables.update(trainium_cluster_name=CLUSTER, trainium_node_pools=node_pools,
                         trainium_kubeconfig=str(state / "eks" / f"{CLUSTER}.yaml"))
        # The inventory's job stays on one pool (at most 100 nodes); the benchmark's job spans them all.
        variables["trainium_job"] = dict(variables["trainium_job"], name=JOB, namespace=NAMESPACE, node_pool=pools[0]["name"],
                                         nnodes=min(2, pools[0]["count"]), nproc_per_node=32)
        deployment.write_text("---\n# Generated by tools/bench/scale-nodes.py from inventories/local.\n"
                              + yaml.safe_dump(variables, sort_keys=False, width=200))
    return pools


class Steps:
    def __init__(self, stack):
        self.stack = stack
        self.figures = {}

    def run(self, name, argv, stdin=None):
        """Run a step with the stack's environment; its seconds; its log in <state>/logs/<name>.log."""
        log = self.stack.logs / f"{name}.log"
        say(f"{name}: {' '.join(str(a) for a in argv)[:160]}")
        started = time.monotonic()
        with open(log, "w", encoding="utf-8") as out:
            completed = subprocess.run([str(a) for a in argv], env=self.stack.env, input=stdin, stdout=out, stderr=subprocess.STDOUT,
                                       text=True, check=False, cwd=ROOT)
        seconds = round(time.monotonic() - started, 1)
        if completed.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
            raise RuntimeError(f"{name} failed (rc {completed.returncode}, {seconds} s); last lines of {log}:\n{tail}")
        say(f"{name}: {seconds} s")
        return seconds

    def kubectl(self, *args, stdin=None):
        completed = subprocess.run([str(self.stack.state / "bin" / "kubectl"), f"--kubeconfig={self.stack.state / 'kubeconfig'}", *args],
                                   input=stdin, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)[:120]} failed: {completed.stderr.strip()[:2000]}")
        return completed.stdout

    def count_ready_nodes(self):
        """(nodes, schedulable nodes): Ready, and without the not-ready/unreachable taints the node lifecycle controller
        puts on a new node and takes off once it is Ready (a scheduler skips a node until then)."""
        items = json.loads(self.kubectl("get", "nodes", "-l", "type=kwok,node.kubernetes.io/instance-type=trn1.32xlarge",
                                        "-o", "json"))["items"]
        ready = [n for n in items if any(c.get("type") == "Ready" and c.get("status") == "True" for c in n["status"].get("conditions") or [])
                 and not any(t.get("key") in NOT_READY_TAINTS for t in (n.get("spec") or {}).get("taints") or [])]
        return len(items), len(ready)

    def wait_ready(self, nodes, timeout=600):
        started = time.monotonic()
        while True:
            total, ready = self.count_ready_nodes()
            if total >= nodes and ready >= nodes:
                return round(time.monotonic() - started, 1)
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"only {ready} of {nodes} kwok nodes Ready and untainted after {timeout} s")
            time.sleep(1)


def storage_objects(node_names):
    """The static FSx volume and claim the job mounts, and the CSINodes the kubelet registers for the driver's node plugin."""
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "fsx-pv-scale"},
          "spec": {"capacity": {"storage": "1200Gi"}, "volumeMode": "Filesystem", "accessModes": ["ReadWriteMany"],
                   "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                   "claimRef": {"namespace": NAMESPACE, "name": "fsx-claim"},
                   "csi": {"driver": FSX_DRIVER, "volumeHandle": "fs-0scalebench000000",
                           "volumeAttributes": {"dnsname": "fs-0scalebench000000.fsx.us-west-2.amazonaws.com", "mountname": "scale"}}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "fsx-claim", "namespace": NAMESPACE},
           "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": "fsx-pv-scale",
                    "resources": {"requests": {"storage": "1200Gi"}}}}
    csinodes = [{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                 "metadata": {"name": name, "labels": {"rehearsal.trainium.eks/registered-by": "scale-benchmark"}},
                 "spec": {"drivers": [{"name": FSX_DRIVER, "nodeID": name}]}} for name in node_names]
    return [pv, pvc], csinodes


def job_playbook(state, nodes, image):
    """A one-task playbook: the Job through trainium.eks.neuron_job, waiting until every pod is Running.

    The image is never pulled (kwok runs no containers); it names the private stack's registry port."""
    play = [{
        "name": f"Scale benchmark - a {nodes}-node job to Running",
        "hosts": "trainium", "gather_facts": False,
        "tasks": [{
            "name": "Launch the job and wait for Running",
            "trainium.eks.neuron_job": {
                "name": JOB, "namespace": NAMESPACE, "queue": "{{ trainium_job.queue }}",
                "image": image, "script": "/opt/trainium-eks/train_bert.py",
                "script_args": ["--steps_this_run", "1"], "nnodes": nodes, "nproc_per_node": 32,
                "instance_type": "trn1.32xlarge", "cacheset": "scale", "max_retry": 0,
                "labels": {"trainium.eks/cluster": CLUSTER},
                "kubeconfig": "{{ trainium_kubeconfig }}",
                "wait": True, "wait_for": "running", "wait_timeout": 900, "report_every": 10,
                # A gang of 1,000 may sit Pending with Volcano's reason while it is placed.
                "pending_timeout": 600,
            },
            "register": "scale_job",
        }, {
            "name": "Show the result",
            "ansible.builtin.debug": {"msg": "{{ scale_job.msg }}; {{ scale_job.status.pods }}"},
        }],
    }]
    path = state / "job.yml"
    path.write_text("---\n" + yaml.safe_dump(play, sort_keys=False, width=200))
    return path


def parse_time(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def job_timestamps(steps):
    """Where the time went, from the API's own timestamps (1 s resolution), in seconds after the Job's creation:
    the last pod created (vc-controller-manager), the first and last pod bound (vc-scheduler; PodScheduled=True),
    the last pod Ready (kwok); and the pods Running."""
    job = json.loads(steps.kubectl("get", "jobs.batch.volcano.sh", JOB, "-n", NAMESPACE, "-o", "json"))
    pods = json.loads(steps.kubectl("get", "pods", "-n", NAMESPACE, "-l", f"volcano.sh/job-name={JOB}", "-o", "json"))["items"]
    created = parse_time(job["metadata"]["creationTimestamp"])

    def times(kind):
        return [parse_time(c["lastTransitionTime"]) - created for p in pods for c in p["status"].get("conditions") or []
                if c["type"] == kind and c["status"] == "True"]

    scheduled, ready = times("PodScheduled"), times("Ready")
    return {
        "job_running_s": round(max(ready), 1) if len(ready) == len(pods) and pods else None,
        "pods_running": sum(1 for p in pods if p["status"].get("phase") == "Running"),
        "pods_created_by_s": round(max(parse_time(p["metadata"]["creationTimestamp"]) - created for p in pods), 1) if pods else None,
        "first_bound_s": round(min(scheduled), 1) if scheduled else None,
        "last_bound_s": round(max(scheduled), 1) if scheduled else None,
    }


class Sampler(threading.Thread):
    """The 1-minute load average every 2 s while the job is placed (the machine is shared: informational)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.loads = []

    def run(self):
        while not self.stop.wait(2):
            self.loads.append(float(pathlib.Path("/proc/loadavg").read_text().split()[0]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--nodes", type=int, default=1000, help="fake trn1.32xlarge nodes and job pods (default 1000)")
    parser.add_argument("--state", default=str(ROOT / ".cache" / "bench" / "scale"), help="the private stack's state directory")
    parser.add_argument("--keep", action="store_true", help="leave the private stack up at the end")
    args = parser.parse_args()
    if args.nodes < 1 or args.nodes > 1000:
        sys.exit("--nodes: 1 to 1000 (10 pools of at most 100)")

    state = pathlib.Path(args.state).resolve()
    if (state / "run").is_dir() and any((state / "run").glob("*.pid")):
        sys.exit(f"{state} holds a running stack (take it down: TRAINIUM_REHEARSAL_DIR={state} "
                 f"TRAINIUM_REHEARSAL_SERVICES='{SERVICES}' {REHEARSAL} down, with its ports from {state}/ports.json)")
    # Only a directory this script made (its marker inside) or an empty one is wiped: a mistyped --state never is.
    if state.exists() and any(state.iterdir()) and not (state / MARKER).is_file():
        sys.exit(f"--state: got {state}, which is not empty and was not made by this script (no {MARKER} in it); "
                 "allowed: a new or empty directory, or one an earlier run of tools/bench/scale-nodes.py made")
    shutil.rmtree(state, ignore_errors=True)
    (state / "logs").mkdir(parents=True)
    (state / MARKER).write_text("tools/bench/scale-nodes.py state directory; removed by the next run\n", encoding="utf-8")
    (state / "eks").mkdir()
    stack = Stack(state, args.nodes)
    (state / "ports.json").write_text(json.dumps(stack.ports, indent=2) + "\n")
    say(f"state {state}; ports {min(stack.ports.values())}-{max(stack.ports.values())}; commit "
        + subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip())
    pools = write_inventory(state, args.nodes)
    inventory = state / "inventory"
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "nodes": args.nodes, "pools": len(pools),
              "cpus": os.cpu_count(), "target_running_s": TARGET_RUNNING, "load_at_start": round(os.getloadavg()[0], 2)}

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    ok = False
    steps = Steps(stack)
    try:
        started = time.monotonic()
        stack.up()
        result["stack_up_s"] = round(time.monotonic() - started, 1)
        say(f"private stack up in {result['stack_up_s']} s")

        result["nodes_py_s"] = steps.run("nodes", [VENV / "bin" / "python", ROOT / "tools" / "rehearsal" / "nodes.py", inventory])
        result["nodes_ready_after_s"] = steps.wait_ready(args.nodes)
        result["nodes_created_s"] = round(result["nodes_py_s"] + result["nodes_ready_after_s"], 1)
        say(f"{args.nodes} kwok nodes Ready {result['nodes_created_s']} s after nodes.py started")

        playbook = [VENV / "bin" / "ansible-playbook", "-i", inventory]
        result["cluster_s"] = steps.run("infrastructure", playbook + ["playbooks/infrastructure.yml", "--tags", "network,eks_cluster"])
        result["volcano_s"] = steps.run("volcano", playbook + ["playbooks/platform.yml", "--tags", "volcano"])

        node_names = [f"{pool['name']}-{i}" for pool in pools for i in range(pool["count"])]
        objects, csinodes = storage_objects(node_names)
        t = time.monotonic()
        steps.kubectl("create", "namespace", NAMESPACE)
        steps.kubectl("apply", "--server-side", "--field-manager=scale-benchmark", "-f", "-",
                      stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        steps.kubectl("apply", "--server-side", "--field-manager=scale-benchmark", "-f", "-",
                      stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": csinodes}))
        result["storage_s"] = round(time.monotonic() - t, 1)
        say(f"fsx-claim and {len(csinodes)} CSINodes in {result['storage_s']} s")

        sampler = Sampler()
        sampler.start()
        image = f"127.0.0.1:{stack.ports['TRAINIUM_REGISTRY_PORT']}/bert-pretrain-neuron:0.1.0"
        result["job_module_s"] = steps.run("job", playbook + [job_playbook(state, args.nodes, image)])
        sampler.stop.set()
        result.update(job_timestamps(steps))
        result["load_during_job"] = max(sampler.loads, default=None)
        say(f"job: {result['pods_running']} pods Running; after the Job's creation: pods created by {result['pods_created_by_s']} s, "
            f"bound from {result['first_bound_s']} s to {result['last_bound_s']} s, all Ready at {result['job_running_s']} s; "
            f"the module returned after {result['job_module_s']} s")

        result["status_s"] = steps.run("status", playbook + ["playbooks/status.yml", "-e", json.dumps({"trainium_status_dir": str(state / "status")})])
        status_log = (stack.logs / "status.log").read_text(errors="replace")
        result["status_mentions_running"] = f"running {args.nodes}" in status_log
        result["peak_memory_mib"] = stack.peak_memory_mib()
        ok = True
    except (RuntimeError, KeyboardInterrupt) as error:
        say(f"FAILED: {error}")
        result["error"] = str(error)
        result["peak_memory_mib"] = stack.peak_memory_mib()
    finally:
        if args.keep and stack.up_done:
            say(f"--keep: the private stack stays up; take it down with: TRAINIUM_REHEARSAL_DIR={state} TRAINIUM_REHEARSAL_SERVICES='{SERVICES}' "
                + " ".join(f"{k}={v}" for k, v in stack.ports.items()) + f" {REHEARSAL} down")
        else:
            result["down_clean"] = stack.down()
    (state / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print_table(result, state)
    return 0 if ok and result.get("down_clean", True) else 1


def print_table(result, state):
    def cell(key):
        value = result.get(key)
        return "-" if value is None else f"{value}"

    running = result.get("job_running_s")
    verdict = "-" if running is None else ("met" if running <= TARGET_RUNNING else "MISSED")
    rows = [
        ("private stack up", f"{cell('stack_up_s')} s", ""),
        (f"{result['nodes']} kwok nodes: nodes.py", f"{cell('nodes_py_s')} s", ""),
        ("nodes created (applied and Ready)", f"{cell('nodes_created_s')} s", ""),
        ("cluster (infrastructure.yml --tags network,eks_cluster)", f"{cell('cluster_s')} s", ""),
        ("Volcano adoption and queue (platform.yml --tags volcano)", f"{cell('volcano_s')} s", ""),
        ("fsx-claim and CSINodes", f"{cell('storage_s')} s", ""),
        (f"job launch -> Running ({cell('pods_running')} pods; API timestamps)", f"{cell('job_running_s')} s",
         f"target {TARGET_RUNNING:.0f} s: {verdict}"),
        ("  of which: pods created (vc-controller-manager)", f"{cell('pods_created_by_s')} s", ""),
        ("  of which: first pod bound (vc-scheduler)", f"{cell('first_bound_s')} s", ""),
        ("  of which: last pod bound (vc-scheduler)", f"{cell('last_bound_s')} s", ""),
        ("job launch -> neuron_job returned (ansible-playbook)", f"{cell('job_module_s')} s", ""),
        ("status.yml", f"{cell('status_s')} s", f"shows {result['nodes']} running" if result.get("status_mentions_running") else ""),
    ]
    rows.append(("load average (1 min) at the start / highest during the job", f"{cell('load_at_start')} / {cell('load_during_job')}", ""))
    for name, mib in sorted((result.get("peak_memory_mib") or {}).items()):
        rows.append((f"peak memory {name}", f"{mib} MiB", ""))
    width = max(len(r[0]) for r in rows)
    print()
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>10}  {note}")
    print(f"\n  written: {state / 'result.json'}")


if __name__ == "__main__":
    sys.exit(main())
