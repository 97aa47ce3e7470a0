# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's pod runner: the kubelet of the fake (kwok) nodes, for workload pods only.

    .venv/bin/python tools/rehearsal/pod_runner.py run             # the daemon (services/podrunner.sh)
    .venv/bin/python tools/rehearsal/pod_runner.py kill-worker NAMESPACE POD
    .venv/bin/python tools/rehearsal/pod_runner.py stop-all        # kill every pod process (rehearsal.sh down)

A pod is run when it carries the label ``trainium.eks/workload``, is bound to
a node labelled ``type=kwok`` and is not terminated. Every other pod stays a
kwok fake. For each such pod (by UID) the runner

- pulls the first container's image from the rehearsal registry
  (``TRAINIUM_REGISTRY``; an ECR repository URI ``*.dkr.ecr.*.amazonaws.com/R``
  is the same repository R there, as the rehearsal's ECR is that registry) and
  extracts its layers (whiteouts honoured, nothing written outside the
  directory) into ``$STATE/images/<manifest digest>/rootfs``; an image that
  is not there fails the pod (reason ErrImagePull, a line in its log);
- maps the pod's paths to local directories (see ``PathMap``) and runs the
  container's command and args (or the image's entrypoint and cmd) with the
  pod's environment as a process group, through a small shim process (its own
  session, so the runner can restart without killing pods) that writes the
  output in the CRI log format to ``$STATE/pods/<uid>/<container>.log`` and the
  exit code to ``$STATE/pods/<uid>/exit-code``;
- creates the kwok ``Logs`` object of the pod pointing at that file, so
  ``kubectl logs`` and the API's pods/log show the output;
- ends the pod through kwok's stages when the process exits: exit 0 sets the
  annotation ``rehearsal.trainium.eks/complete: "true"`` (Succeeded), any other
  code ``rehearsal.trainium.eks/fail: "true"`` and
  ``rehearsal.trainium.eks/exit-code: "<n>"`` (Failed, reason Error);
- kills the process group (SIGTERM, SIGKILL after a grace) when the pod gets a
  deletionTimestamp, goes away or is ended by someone else.

It also does the kubelet's CSI driver registration: every few seconds it keeps
one CSINode per kwok node listing the drivers of the Running pods there (any
pod, not only workload pods) whose container has
``--kubelet-registration-path=/var/lib/kubelet/plugins/<driver>/csi.sock`` (a
node-driver-registrar); Volcano counts a pod's CSI volume against it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import fcntl
import hashlib
import json
import logging
import os
import pathlib
import queue
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tarfile
import threading
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
STANDINS = ROOT / "tools" / "rehearsal" / "standins"
SITECUSTOMIZE_DIR = STANDINS / "python"

WORKLOAD_LABEL = "trainium.eks/workload"
# The annotation of the kwok stage rehearsal-pod-succeed: a pod that carries it is left to kwok.
FAKE_COMPLETE_ANNOTATION = "rehearsal.trainium.eks/complete"
# A namespace label: its pods stay kwok fakes (tests that finish or fail pods by annotation).
FAKE_NAMESPACE_LABEL = "rehearsal.trainium.eks/pods"
# A CSI node-driver-registrar's argument that names the driver it registers with the kubelet.
CSI_REGISTRATION_RE = re.compile(r"^--kubelet-registration-path=/var/lib/kubelet/plugins/(?P<driver>[A-Za-z0-9.-]+)/csi\.sock$")
KWOK_NODE_SELECTOR = "type=kwok"
ANNOTATION_COMPLETE = "rehearsal.trainium.eks/complete"
ANNOTATION_FAIL = "rehearsal.trainium.eks/fail"
ANNOTATION_EXIT_CODE = "rehearsal.trainium.eks/exit-code"
ANNOTATION_REASON = "rehearsal.trainium.eks/fail-reason"
LOGS_GROUP, LOGS_VERSION, LOGS_PLURAL = "kwok.x-k8s.io", "v1alpha1", "logs"
POD_UID_LABEL = "rehearsal.trainium.eks/pod-uid"
GRACE_SECONDS = 5
PULL_FAILED_EXIT = 128
# Top-level directories of an image that stay the host's: a path under them is
# never rewritten into the image's root file system (the host's python, bash
# and libraries run the command, not the image's).
SYSTEM_DIRS = {"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "proc",
               "root", "run", "sbin", "srv", "sys", "tmp", "usr", "var"}
MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
ECR_HOST = re.compile(r"^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$")

LOG = logging.getLogger("pod_runner")


def state_dir():
    return pathlib.Path(os.environ.get("TRAINIUM_REHEARSAL_DIR") or ROOT / ".rehearsal")


def pods_dir():
    return state_dir() / "pods"


def write_json(path, data):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def read_json(path, default=None):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


# --------------------------------------------------------------------------- registry


class PullError(Exception):
    """The image cannot be pulled (the message goes into the pod's log)."""


class Registry:
    """A minimal OCI / Docker registry v2 client: basic auth, the rehearsal CA."""

    def __init__(self, address, username, password, ca_file):
        self.address = address
        self.auth = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode() if username else None
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()

    @classmethod
    def from_env(cls):
        address = os.environ.get("TRAINIUM_REGISTRY")
        if not address:
            return None
        return cls(address, os.environ.get("TRAINIUM_REGISTRY_USERNAME"), os.environ.get("TRAINIUM_REGISTRY_PASSWORD", ""),
                   os.environ.get("TRAINIUM_REGISTRY_CA_FILE"))

    def repository_of(self, image):
        """(repository, reference) of an image in this registry, or None when it lives elsewhere."""
        name, reference = image, "latest"
        if "@" in name:
            # repo@sha256:... or repo:tag@sha256:... (the digest wins over the tag, as with containerd)
            name, reference = name.split("@", 1)
            if ":" in name.rsplit("/", 1)[-1]:
                name = name.rsplit(":", 1)[0]
        elif ":" in name.rsplit("/", 1)[-1]:
            name, reference = name.rsplit(":", 1)
        host, slash, repository = name.partition("/")
        local = {self.address, self.address.replace("127.0.0.1", "localhost")}
        if not repository or not (host in local or ECR_HOST.match(host)):
            return None
        return repository, reference

    def get(self, path, accept=None):
        request = urllib.request.Request(f"https://{self.address}/v2/{path}")
        if self.auth:
            request.add_header("Authorization", self.auth)
        if accept:
            request.add_header("Accept", ", ".join(accept))
        return urllib.request.urlopen(request, context=self.context, timeout=60)  # noqa: S310 (https only)

    def manifest(self, repository, reference):
        """The image manifest (the linux/amd64 one of an index) and its digest."""
        for attempt in range(3):  # pylint: disable=unused-variable
            try:
                with self.get(f"{repository}/manifests/{reference}", MANIFEST_TYPES) as answer:
                    body = answer.read()
                    media = answer.headers.get("Content-Type", "")
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    raise PullError(f"manifest unknown: {repository}:{reference} is not in the rehearsal registry {self.address}") from error
                raise PullError(f"{self.address}/{repository}:{reference}: HTTP {error.code} {error.reason}") from error
            except (urllib.error.URLError, OSError) as error:
                raise PullError(f"cannot reach the rehearsal registry {self.address}: {error}") from error
            document = json.loads(body)
            media = document.get("mediaType") or media
            if "index" in media or "manifest.list" in media:
                choices = document.get("manifests") or []
                chosen = next((m for m in choices if (m.get("platform") or {}).get("os") == "linux"
                               and (m.get("platform") or {}).get("architecture") == "amd64"), choices[0] if choices else None)
                if not chosen:
                    raise PullError(f"{repository}:{reference}: the image index lists no manifest")
                reference = chosen["digest"]
                continue
            return document, "sha256:" + hashlib.sha256(body).hexdigest()
        raise PullError(f"{repository}:{reference}: nested image indexes")

    def blob(self, repository, digest, target):
        """Download a blob to target, checking its digest."""
        algorithm, colon, expected = digest.partition(":")
        hasher = hashlib.new(algorithm)
        try:
            with self.get(f"{repository}/blobs/{digest}") as answer, open(target, "wb") as out:
                while chunk := answer.read(1 << 20):
                    hasher.update(chunk)
                    out.write(chunk)
        except urllib.error.HTTPError as error:
            raise PullError(f"blob {digest} of {repository}: HTTP {error.code} {error.reason}") from error
        if hasher.hexdigest() != expected:
            raise PullError(f"blob {digest} of {repository}: digest mismatch")


def _inside(root, path):
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def apply_layer(rootfs, layer_file):
    """Extract one layer tar (gzip or plain) into rootfs, honouring OCI whiteouts, refusing escapes."""
    root = os.path.realpath(rootfs)
    with tarfile.open(layer_file, "r:*") as tar:
        members = tar.getmembers()
        # Whiteouts first: they delete what lower layers put there.
        for member in members:
            name = os.path.normpath(member.name.lstrip("/"))
            if name.startswith("..") or name == ".":
                continue
            directory, base = os.path.split(name)
            if not base.startswith(".wh."):
                continue
            parent = os.path.join(root, directory)
            if not _inside(root, parent) or not os.path.isdir(parent):
                continue
            if base == ".wh..wh..opq":
                for entry in os.listdir(parent):
                    _remove(os.path.join(parent, entry))
            elif base[4:] not in ("", ".", ".."):
                _remove(os.path.join(parent, base[4:]))
        for member in members:
            name = os.path.normpath(member.name.lstrip("/"))
            if name.startswith("..") or name == "." or os.path.basename(name).startswith(".wh."):
                continue
            if member.ischr() or member.isblk() or member.isfifo():
                continue
            target = os.path.join(root, name)
            if not _inside(root, os.path.dirname(target)):
                LOG.warning("layer %s: %s is outside the root file system; skipped", layer_file, member.name)
                continue
            if os.path.lexists(target) and not (member.isdir() and os.path.isdir(target) and not os.path.islink(target)):
                _remove(target)
            try:
                tar.extract(member, root, set_attrs=not member.issym(), filter="tar")
            except (tarfile.FilterError, OSError) as error:
                LOG.warning("layer %s: %s not extracted: %s", layer_file, member.name, error)


class ImageCache:
    """Extracted images under $STATE/images/<manifest digest>/ (rootfs/ and config.json)."""

    def __init__(self, registry, root):
        self.registry = registry
        self.root = root
        self.lock = threading.Lock()

    def pull(self, image):
        """(rootfs path, image config) of image, pulled and extracted once."""
        where = self.registry.repository_of(image) if self.registry else None
        if where is None:
            raise PullError(f"image {image} is not in the rehearsal registry ({self.registry.address if self.registry else 'TRAINIUM_REGISTRY unset'})")
        repository, reference = where
        manifest, digest = self.registry.manifest(repository, reference)
        directory = self.root / digest.replace(":", "-")
        self.root.mkdir(parents=True, exist_ok=True)
        with self.lock, open(self.root / f"{directory.name}.lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (directory / "complete").exists():
                LOG.info("pulling %s (%s)", image, digest)
                shutil.rmtree(directory, ignore_errors=True)
                (directory / "rootfs").mkdir(parents=True)
                config = {}
                if manifest.get("config", {}).get("digest"):
                    self.registry.blob(repository, manifest["config"]["digest"], directory / "config.json")
                    config = read_json(directory / "config.json", {})
                write_json(directory / "config.json", config)
                for layer in manifest.get("layers") or []:
                    blob = directory / "layer.tar"
                    self.registry.blob(repository, layer["digest"], blob)
                    apply_layer(str(directory / "rootfs"), blob)
                    blob.unlink()
                (directory / "complete").write_text(image + "\n")
        return directory / "rootfs", (read_json(directory / "config.json", {}) or {}).get("config") or {}


# --------------------------------------------------------------------------- paths and environment


class PathMap:
    """Pod paths -> local paths, by longest prefix at path boundaries.

    Volume mounts first (their mountPath, subPath honoured): a
    persistentVolumeClaim is $STATE/shared/<namespace>/<claim>/, an emptyDir
    (also medium Memory, e.g. /dev/shm) and every other volume a directory of
    the pod ($STATE/pods/<uid>/volumes/<volume>/). Then every top-level entry
    of the image that is not a system directory (/opt, /workspace, ...) maps
    into the extracted image. /tmp is a directory of the pod. Anything else
    (/usr/bin/python3, /bin/bash) stays the host's.
    """

    BOUNDARY_BEFORE = r"(?:(?<=[\s'\"=:,(\[{])|^)"
    BOUNDARY_AFTER = r"(?=$|[/\s'\";:,)\]}&|>])"

    def __init__(self, pairs):
        self.pairs = sorted(((p.rstrip("/") or "/", str(h)) for p, h in pairs), key=lambda item: -len(item[0]))
        self.table = dict(self.pairs)
        alternatives = "|".join(re.escape(p) for p, local in self.pairs if p != "/")
        self.pattern = re.compile(self.BOUNDARY_BEFORE + f"({alternatives})" + self.BOUNDARY_AFTER) if alternatives else None

    def rewrite(self, text):
        if not self.pattern or not isinstance(text, str):
            return text
        return self.pattern.sub(lambda match: self.table[match.group(1)], text)

    def path(self, pod_path):
        """The local path of one absolute pod path (None when it stays the host's)."""
        rewritten = self.rewrite(pod_path)
        return rewritten if rewritten != pod_path else None


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text, env):
    """Kubernetes' $(VAR) expansion: defined names replaced, $$ escapes a $, unknown references left."""
    def repl(match):
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return _REFERENCE.sub(repl, text)


_SUFFIX = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "m": 10 ** -3}


def quantity(text):
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(text).strip())
    if not match:
        return 0.0
    return float(match.group(1)) * _SUFFIX.get(match.group(2), 1)


def host_aliases(pod, env):
    """name[:port]=address[:port] entries the pod's Python resolves (sitecustomize.py)."""
    namespace = pod.metadata.namespace
    rdzv = os.environ.get("TRAINIUM_RDZV_ENDPOINT", "127.0.0.1:2379")
    names = {}

    def forms(name):
        return [name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"]

    for form in forms("etcd-server"):
        names[f"{form}:2379"] = rdzv
        names[form] = rdzv.rsplit(":", 1)[0]
    for key, value in env.items():
        if key.startswith("VC_") and key.endswith("_HOSTS"):
            for host in filter(None, (h.strip() for h in value.split(","))):
                for form in [host] + forms(host)[1:]:
                    names[form] = "127.0.0.1"
    entries = [f"{name}={address}" for name, address in names.items()]
    extra = os.environ.get("TRAINIUM_REHEARSAL_HOST_ALIASES", "").strip()
    return " ".join(([extra] if extra else []) + entries)


# --------------------------------------------------------------------------- the shim


def cri_timestamp():
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond * 1000:09d}Z"


class CriLog:
    """Lines in the CRI log format kwok's log reader (the kubelet's) parses: <time> <stream> F|P <text>."""

    def __init__(self, path):
        self.handle = open(path, "ab", buffering=0)  # pylint: disable=consider-using-with
        self.lock = threading.Lock()

    def write(self, stream, line, partial=False):
        text = line if line.endswith(b"\n") else line + b"\n"
        record = f"{cri_timestamp()} {stream} {'P' if partial else 'F'} ".encode() + text
        with self.lock:
            self.handle.write(record)

    def pump(self, stream, pipe):
        pending = b""
        while True:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                self.write(stream, line + b"\n")
            if len(pending) > 16384:
                self.write(stream, pending, partial=True)
                pending = b""
        if pending:
            self.write(stream, pending)


def shim(pod_dir):
    """Run the pod's process (spec.json), log its output, record pid/pgid and, at the end, its exit code."""
    pod_dir = pathlib.Path(pod_dir)
    spec = read_json(pod_dir / "spec.json")
    log = CriLog(pod_dir / f"{spec['container']}.log")
    try:
        process = subprocess.Popen(  # pylint: disable=consider-using-with
            spec["argv"], env=spec["env"], cwd=spec["cwd"], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:
        log.write("stderr", f"rehearsal pod runner: cannot start {spec['argv'][0]}: {error}".encode())
        (pod_dir / "exit-code").write_text("127\n")
        return 127
    write_json(pod_dir / "process.json", {"pid": process.pid, "pgid": process.pid, "shim": os.getpid()})
    pumps = [threading.Thread(target=log.pump, args=(name, pipe), daemon=True)
             for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr))]
    for pump in pumps:
        pump.start()
    code = process.wait()
    for pump in pumps:
        pump.join(timeout=10)
    code = 128 - code if code < 0 else code
    tmp = pod_dir / "exit-code.tmp"
    tmp.write_text(f"{code}\n")
    os.replace(tmp, pod_dir / "exit-code")
    return code


# --------------------------------------------------------------------------- processes


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def kill_group(pgid, grace=GRACE_SECONDS):
    """SIGTERM the process group, SIGKILL what is left after grace seconds."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def process_table():
    """{pid: (ppid, argv)} of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = [part.decode(errors="replace") for part in cmdline.read().split(b"\0") if part]
        except (OSError, ValueError, IndexError):
            continue
        table[int(entry)] = (ppid, argv)
    return table


def descendants(table, pid):
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, _argv) in sorted(table.items()):
            if ppid == parent:
                found.append(child)
                frontier.append(child)
    return found


def is_launcher(argv):
    joined = " ".join(argv[:4])
    return "torchrun" in joined or "torch.distributed.run" in joined or "torch.distributed.launch" in joined


def kill_worker(namespace, name):
    """SIGKILL one worker under the pod's torchrun (else the pod's main process); what was killed."""
    candidates = []
    for state in pods_dir().glob("*/pod.json"):
        meta = read_json(state, {})
        process = read_json(state.with_name("process.json"), {})
        if meta.get("namespace") == namespace and meta.get("name") == name and process.get("pid") and pid_alive(process["pid"]):
            candidates.append(process)
    if not candidates:
        raise SystemExit(f"pod {namespace}/{name}: no running process of the rehearsal pod runner")
    main = candidates[0]["pid"]
    table = process_table()
    tree = [main] + descendants(table, main)
    launchers = [pid for pid in tree if is_launcher(table.get(pid, (0, []))[1])]
    for launcher in launchers:
        workers = [pid for pid, (ppid, argv) in table.items() if ppid == launcher and argv and "python" in os.path.basename(argv[0])]
        if workers:
            victim = max(workers)
            os.kill(victim, signal.SIGKILL)
            return f"pod {namespace}/{name}: killed worker pid {victim} ({' '.join(table[victim][1])[:200]}) of torchrun pid {launcher}"
    os.kill(main, signal.SIGKILL)
    return f"pod {namespace}/{name}: killed its main process pid {main} ({' '.join(table.get(main, (0, []))[1])[:200]})"


def stop_all():
    """Kill the process group of every pod the runner started (rehearsal.sh down)."""
    stopped = []
    groups = []
    for state in pods_dir().glob("*/process.json"):
        process = read_json(state, {})
        if process.get("pgid") and group_alive(process["pgid"]):
            groups.append((state.parent.name, process["pgid"]))
    threads = [threading.Thread(target=kill_group, args=(pgid,)) for _uid, pgid in groups]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stopped = [uid for uid, _pgid in groups]
    return stopped


# --------------------------------------------------------------------------- the runner


class Runner:
    """Watches workload pods on kwok nodes and runs them (see the module docstring)."""

    def __init__(self, kubeconfig, train_venv, heartbeat):
        import kubernetes  # pylint: disable=import-outside-toplevel

        self.k8s = kubernetes
        self.api = kubernetes.config.new_client_from_config(config_file=kubeconfig)
        self.core = kubernetes.client.CoreV1Api(self.api)
        self.custom = kubernetes.client.CustomObjectsApi(self.api)
        self.train_venv = train_venv
        self.heartbeat = pathlib.Path(heartbeat) if heartbeat else None
        self.images = ImageCache(Registry.from_env(), state_dir() / "images")
        self.shared = pathlib.Path(os.environ.get("TRAINIUM_REHEARSAL_SHARED_DIR") or state_dir() / "shared")
        self.events = queue.Queue()
        self.kwok_nodes = set()
        self.starting = set()
        self.pods = {}  # uid -> last seen pod object
        self.namespaces = {}  # name -> (fake pods wanted, when read)
        pods_dir().mkdir(parents=True, exist_ok=True)

    # -- the API

    def refresh_nodes(self):
        self.kwok_nodes = {n.metadata.name for n in self.core.list_node(label_selector=KWOK_NODE_SELECTOR).items}

    def watch(self):
        """List, then watch from the list's version; relist when the watch expires or breaks."""
        while True:
            try:
                listing = self.core.list_pod_for_all_namespaces(label_selector=WORKLOAD_LABEL)
                self.events.put(("LIST", listing.items))
                version = listing.metadata.resource_version
                watcher = self.k8s.watch.Watch()
                for event in watcher.stream(self.core.list_pod_for_all_namespaces, label_selector=WORKLOAD_LABEL,
                                            resource_version=version, timeout_seconds=60):
                    if event["type"] == "ERROR":
                        break
                    self.events.put((event["type"], event["object"]))
            except Exception as error:  # pylint: disable=broad-except
                LOG.warning("watching pods: %s; listing again", error)
                time.sleep(2)

    def logs_object(self, pod, log_file):
        return {
            "apiVersion": f"{LOGS_GROUP}/{LOGS_VERSION}",
            "kind": "Logs",
            "metadata": {"name": pod.metadata.name, "namespace": pod.metadata.namespace,
                         "labels": {POD_UID_LABEL: pod.metadata.uid, "app.kubernetes.io/managed-by": "rehearsal-pod-runner"}},
            "spec": {"logs": [{"containers": [c.name for c in pod.spec.containers], "logsFile": str(log_file), "follow": True}]},
        }

    def put_logs(self, pod, log_file):
        body = self.logs_object(pod, log_file)
        try:
            self.custom.create_namespaced_custom_object(LOGS_GROUP, LOGS_VERSION, pod.metadata.namespace, LOGS_PLURAL, body)
        except self.k8s.client.ApiException as error:
            if error.status != 409:
                raise
            self.custom.replace_namespaced_custom_object(LOGS_GROUP, LOGS_VERSION, pod.metadata.namespace, LOGS_PLURAL,
                                                         pod.metadata.name, self._with_version(pod, body))

    def _with_version(self, pod, body):
        current = self.custom.get_namespaced_custom_object(LOGS_GROUP, LOGS_VERSION, pod.metadata.namespace, LOGS_PLURAL, pod.metadata.name)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return body

    def delete_logs(self, namespace, name, uid):
        """Delete the pod's Logs object unless it already belongs to a newer pod of the same name."""
        try:
            current = self.custom.get_namespaced_custom_object(LOGS_GROUP, LOGS_VERSION, namespace, LOGS_PLURAL, name)
            if (current["metadata"].get("labels") or {}).get(POD_UID_LABEL) != uid:
                return
            self.custom.delete_namespaced_custom_object(
                LOGS_GROUP, LOGS_VERSION, namespace, LOGS_PLURAL, name,
                body={"preconditions": {"uid": current["metadata"]["uid"]}})
        except self.k8s.client.ApiException as error:
            if error.status not in (404, 409):
                LOG.warning("deleting the Logs of %s/%s: %s", namespace, name, error)

    def annotate(self, namespace, name, uid, annotations):
        patch = {"metadata": {"annotations": annotations}}
        try:
            pod = self.core.read_namespaced_pod(name, namespace)
            if pod.metadata.uid != uid:
                return
            self.core.patch_namespaced_pod(name, namespace, patch)
        except self.k8s.client.ApiException as error:
            if error.status != 404:
                LOG.warning("annotating %s/%s: %s", namespace, name, error)

    # -- one pod

    def wanted(self, pod):
        if WORKLOAD_LABEL not in (pod.metadata.labels or {}):
            return False
        # A pod a test asks kwok to finish (rehearsal.trainium.eks/complete), or any pod of a namespace labelled
        # rehearsal.trainium.eks/pods=fake, is a fake by request: not run.
        if (pod.metadata.annotations or {}).get(FAKE_COMPLETE_ANNOTATION) == "true":
            return False
        if self.fake_namespace(pod.metadata.namespace):
            return False
        if pod.metadata.deletion_timestamp or (pod.status and pod.status.phase in ("Succeeded", "Failed")):
            return False
        node = pod.spec.node_name
        if not node:
            return False
        if node not in self.kwok_nodes:
            self.refresh_nodes()
        return node in self.kwok_nodes

    def fake_namespace(self, namespace):
        """Whether the namespace asks for fake pods (label rehearsal.trainium.eks/pods=fake); read once a minute."""
        known = self.namespaces.get(namespace)
        if known is None or time.monotonic() - known[1] > 60:
            try:
                labels = self.core.read_namespace(namespace).metadata.labels or {}
            except self.k8s.client.ApiException:
                labels = {}
            known = (labels.get(FAKE_NAMESPACE_LABEL) == "fake", time.monotonic())
            self.namespaces[namespace] = known
        return known[0]

    def pod_dir(self, uid):
        return pods_dir() / uid

    def start(self, pod):
        uid = pod.metadata.uid
        directory = self.pod_dir(uid)
        if uid in self.starting:
            return
        if (directory / "pod.json").exists() and ((directory / "launched").exists() or (directory / "exit-code").exists()):
            return
        self.starting.add(uid)
        directory.mkdir(parents=True, exist_ok=True)
        container = pod.spec.containers[0]
        log_file = directory / f"{container.name}.log"
        log_file.touch()
        write_json(directory / "pod.json", {"namespace": pod.metadata.namespace, "name": pod.metadata.name, "uid": uid,
                                            "container": container.name, "node": pod.spec.node_name, "image": container.image})
        try:
            self.put_logs(pod, log_file)
        except Exception as error:  # pylint: disable=broad-except
            LOG.warning("creating the Logs of %s/%s: %s", pod.metadata.namespace, pod.metadata.name, error)
        threading.Thread(target=self._launch, args=(pod, directory), daemon=True).start()

    def _launch(self, pod, directory):
        name = f"{pod.metadata.namespace}/{pod.metadata.name}"
        container = pod.spec.containers[0]
        log = CriLog(directory / f"{container.name}.log")
        try:
            try:
                rootfs, image_config = self.images.pull(container.image)
            except PullError as error:
                log.write("stderr", f"rehearsal pod runner: ErrImagePull: failed to pull image {container.image!r}: {error}".encode())
                LOG.warning("%s: %s", name, error)
                (directory / "exit-code").write_text(f"{PULL_FAILED_EXIT}\n")
                (directory / "reason").write_text("ErrImagePull\n")
                return
            spec = self.process_spec(pod, container, directory, rootfs, image_config)
            write_json(directory / "spec.json", spec)
            (directory / "launched").write_text(f"{time.time()}\n")
            log_handle = open(directory / "shim.log", "ab")  # pylint: disable=consider-using-with
            subprocess.Popen(  # pylint: disable=consider-using-with
                [sys.executable, str(pathlib.Path(__file__).resolve()), "shim", str(directory)],
                stdin=subprocess.DEVNULL, stdout=log_handle, stderr=log_handle, start_new_session=True, close_fds=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1"))
            log_handle.close()
            LOG.info("%s: started %s", name, " ".join(spec["argv"])[:300])
        except Exception as error:  # pylint: disable=broad-except
            LOG.exception("%s: cannot start", name)
            log.write("stderr", f"rehearsal pod runner: cannot start the container: {error}".encode())
            (directory / "exit-code").write_text("128\n")
            (directory / "reason").write_text("StartError\n")
        finally:
            self.starting.discard(pod.metadata.uid)

    def volume_dirs(self, pod, directory):
        """{volume name: local dir} for every volume of the pod."""
        dirs = {}
        for volume in pod.spec.volumes or []:
            if volume.persistent_volume_claim:
                local = self.shared / pod.metadata.namespace / volume.persistent_volume_claim.claim_name
            else:
                local = directory / "volumes" / volume.name
            local.mkdir(parents=True, exist_ok=True)
            source = volume.config_map or volume.secret
            if source is not None:
                self.fill_keys(pod.metadata.namespace, volume, local)
            dirs[volume.name] = local
        return dirs

    def fill_keys(self, namespace, volume, local):
        try:
            if volume.config_map:
                data = self.core.read_namespaced_config_map(volume.config_map.name, namespace).data or {}
                items = volume.config_map.items
            else:
                raw = self.core.read_namespaced_secret(volume.secret.secret_name, namespace).data or {}
                data = {key: base64.b64decode(value).decode(errors="replace") for key, value in raw.items()}
                items = volume.secret.items
        except self.k8s.client.ApiException:
            return
        paths = {item.key: item.path for item in items} if items else {key: key for key in data}
        for key, path in paths.items():
            if key in data and ".." not in path.split("/"):
                (local / path).parent.mkdir(parents=True, exist_ok=True)
                (local / path).write_text(data[key])

    def path_map(self, pod, container, directory, rootfs):
        volumes = self.volume_dirs(pod, directory)
        pairs = []
        for mount in container.volume_mounts or []:
            local = volumes.get(mount.name)
            if local is None:
                continue
            if mount.sub_path:
                local = local / mount.sub_path
                local.mkdir(parents=True, exist_ok=True)
            pairs.append((mount.mount_path, local))
        tmp = directory / "tmp"
        tmp.mkdir(exist_ok=True)
        pairs.append(("/tmp", tmp))
        for entry in sorted(os.listdir(rootfs)):
            if entry not in SYSTEM_DIRS:
                pairs.append((f"/{entry}", rootfs / entry))
        return PathMap(pairs), tmp

    def resolve_env(self, pod, container, image_config):
        env = {}
        for item in image_config.get("Env") or []:
            key, equals, value = item.partition("=")
            env[key] = value
        namespace = pod.metadata.namespace
        for source in container.env_from or []:
            data = self._source_data(namespace, source.config_map_ref, source.secret_ref)
            for key, value in data.items():
                env[(source.prefix or "") + key] = value
        for var in container.env or []:
            if var.value_from is None:
                env[var.name] = expand(var.value or "", env)
                continue
            value = self._value_from(pod, container, var.value_from)
            if value is not None:
                env[var.name] = value
        return env

    def _source_data(self, namespace, config_map_ref, secret_ref):
        try:
            if config_map_ref is not None:
                return self.core.read_namespaced_config_map(config_map_ref.name, namespace).data or {}
            if secret_ref is not None:
                raw = self.core.read_namespaced_secret(secret_ref.name, namespace).data or {}
                return {key: base64.b64decode(value).decode(errors="replace") for key, value in raw.items()}
        except self.k8s.client.ApiException:
            pass
        return {}

    def _value_from(self, pod, container, value_from):
        if value_from.field_ref is not None:
            path = value_from.field_ref.field_path
            simple = {"metadata.name": pod.metadata.name, "metadata.namespace": pod.metadata.namespace,
                      "metadata.uid": pod.metadata.uid, "spec.nodeName": pod.spec.node_name,
                      "spec.serviceAccountName": pod.spec.service_account_name,
                      "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1", "status.podIPs": "127.0.0.1",
                      "status.hostIPs": "127.0.0.1"}
            if path in simple:
                return simple[path]
            match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
            if match:
                return (getattr(pod.metadata, match.group(1)) or {}).get(match.group(2), "")
            return ""
        if value_from.resource_field_ref is not None:
            ref = value_from.resource_field_ref
            kind, dot, resource = ref.resource.partition(".")
            resources = container.resources
            figures = (resources.limits if kind == "limits" else resources.requests) if resources else None
            raw = (figures or {}).get(resource)
            if raw is None:
                raw = str(os.cpu_count()) if resource == "cpu" else str(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
            divisor = quantity(ref.divisor) if ref.divisor else 1
            value = quantity(raw) / (divisor or 1)
            return str(max(1, int(-(-value // 1))) if resource == "cpu" else int(-(-value // 1)))
        data = {}
        if value_from.config_map_key_ref is not None:
            ref = value_from.config_map_key_ref
            with contextlib.suppress(self.k8s.client.ApiException):
                data = self.core.read_namespaced_config_map(ref.name, pod.metadata.namespace).data or {}
            return data.get(ref.key)
        if value_from.secret_key_ref is not None:
            ref = value_from.secret_key_ref
            with contextlib.suppress(self.k8s.client.ApiException):
                raw = self.core.read_namespaced_secret(ref.name, pod.metadata.namespace).data or {}
                return base64.b64decode(raw[ref.key]).decode(errors="replace") if ref.key in raw else None
        return None

    def process_spec(self, pod, container, directory, rootfs, image_config):
        env = self.resolve_env(pod, container, image_config)
        argv = list(container.command or image_config.get("Entrypoint") or [])
        args = container.args if container.command or container.args else image_config.get("Cmd")
        argv += list(args or [])
        if not argv:
            raise ValueError("the container has no command (and its image no entrypoint)")
        argv = [expand(arg, env) for arg in argv]
        paths, tmp = self.path_map(pod, container, directory, rootfs)
        env = {key: paths.rewrite(value) for key, value in env.items()}
        env["HOSTNAME"] = pod.spec.hostname or pod.metadata.name
        env["PATH"] = os.pathsep.join([str(STANDINS), f"{self.train_venv}/bin", "/usr/bin", "/bin"])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITECUSTOMIZE_DIR), env.get("PYTHONPATH")]))
        env["TMPDIR"] = str(tmp)
        env["HOME"] = env.get("HOME") if env.get("HOME", "").startswith(str(directory)) else str(directory / "home")
        pathlib.Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
        env["TRAINIUM_REHEARSAL_HOST_ALIASES"] = host_aliases(pod, env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        argv = [paths.rewrite(arg) for arg in argv]
        workdir = container.working_dir or image_config.get("WorkingDir") or ""
        cwd = paths.path(workdir) if workdir.startswith("/") and workdir != "/" else None
        if cwd is None:
            cwd = directory / "work"
        pathlib.Path(cwd).mkdir(parents=True, exist_ok=True)
        return {"container": container.name, "argv": argv, "env": env, "cwd": str(cwd),
                "paths": paths.pairs}

    def stop(self, uid, namespace=None, name=None, forget=False):
        """Kill the pod's processes (in a thread) and, when the pod is gone, its Logs and temp dirs."""
        directory = self.pod_dir(uid)
        process = read_json(directory / "process.json", {})
        meta = read_json(directory / "pod.json", {})
        namespace, name = namespace or meta.get("namespace"), name or meta.get("name")
        if forget and namespace and name:
            self.delete_logs(namespace, name, uid)

        def work():
            if process.get("pgid") and group_alive(process["pgid"]):
                LOG.info("%s/%s: stopping process group %s", namespace, name, process["pgid"])
                kill_group(process["pgid"])
            if forget:
                for sub in ("volumes", "tmp", "work", "home"):
                    shutil.rmtree(directory / sub, ignore_errors=True)
                with contextlib.suppress(OSError):
                    (directory / "gone").write_text(f"{time.time()}\n")

        threading.Thread(target=work, daemon=True).start()

    def report_exit(self, uid):
        """Set the pod's end (kwok stages) once its process has exited."""
        directory = self.pod_dir(uid)
        if (directory / "reported").exists():
            return
        if not (directory / "exit-code").exists():
            process = read_json(directory / "process.json", {})
            # A shim that died without writing the exit code (killed): its pod failed.
            if process.get("shim") and not pid_alive(process["shim"]) and not (directory / "exit-code").exists():
                if process.get("pgid") and group_alive(process["pgid"]):
                    kill_group(process["pgid"], grace=0)
                (directory / "exit-code").write_text("137\n")
            else:
                return
        meta = read_json(directory / "pod.json", {})
        code = int((directory / "exit-code").read_text().strip() or 1)
        if code == 0:
            annotations = {ANNOTATION_COMPLETE: "true"}
        else:
            annotations = {ANNOTATION_FAIL: "true", ANNOTATION_EXIT_CODE: str(code)}
            if (directory / "reason").exists():
                annotations[ANNOTATION_REASON] = (directory / "reason").read_text().strip()
        LOG.info("%s/%s: exited with %s", meta.get("namespace"), meta.get("name"), code)
        self.annotate(meta["namespace"], meta["name"], uid, annotations)
        (directory / "reported").write_text(f"{code}\n")

    def handle(self, kind, obj):
        if kind == "LIST":
            seen = {}
            for pod in obj:
                seen[pod.metadata.uid] = pod
                self.handle("MODIFIED", pod)
            for uid in list(self.pods):
                if uid not in seen:
                    self.handle("DELETED", self.pods[uid])
            self.adopt(seen)
            return
        uid = obj.metadata.uid
        if kind == "DELETED":
            self.pods.pop(uid, None)
            if self.pod_dir(uid).exists():
                self.stop(uid, obj.metadata.namespace, obj.metadata.name, forget=True)
            return
        self.pods[uid] = obj
        if self.wanted(obj):
            self.start(obj)
        elif self.pod_dir(uid).exists() and (obj.metadata.deletion_timestamp or (obj.status and obj.status.phase in ("Succeeded", "Failed"))):
            process = read_json(self.pod_dir(uid) / "process.json", {})
            if process.get("pgid") and group_alive(process["pgid"]):
                self.stop(uid)

    def adopt(self, seen):
        """After a (re)list: pod directories of pods that no longer exist lose their processes and Logs."""
        for directory in pods_dir().iterdir():
            if not directory.is_dir() or directory.name in seen:
                continue
            gone = directory / "gone"
            if not gone.exists():
                self.stop(directory.name, forget=True)
            elif time.time() - gone.stat().st_mtime > 3600:
                shutil.rmtree(directory, ignore_errors=True)

    # -- CSI node plugins: what the kubelet does when a node plugin registers

    def csi_drivers_by_node(self):
        """{kwok node: {driver}} of the Running pods whose node-driver-registrar names a kubelet registration path."""
        wanted = {node: set() for node in self.kwok_nodes}
        for pod in self.core.list_pod_for_all_namespaces(field_selector="status.phase=Running").items:
            node = pod.spec.node_name
            if node not in wanted or pod.metadata.deletion_timestamp:
                continue
            for container in pod.spec.containers:
                env = {item.name: item.value for item in (container.env or []) if item.value is not None}
                for arg in (container.args or []) + (container.command or []):
                    match = CSI_REGISTRATION_RE.match(expand(str(arg), env))
                    if match:
                        wanted[node].add(match["driver"])
        return wanted

    def register_csi_drivers(self):
        """Keep a CSINode per kwok node listing the CSI drivers whose node plugin runs there, as the kubelet does.

        Schedulers read it: Volcano adds a node's CSI drivers to what the node offers, and without it a pod
        with a CSI volume (fsx-claim) asks for an attach slot no node has.
        """
        storage = self.k8s.client.StorageV1Api(self.api)
        # Read as plain JSON: the client's models refuse a CSINode whose drivers list is empty (null).
        listed = json.loads(storage.list_csi_node(_preload_content=False).data)
        existing = {item["metadata"]["name"]: item for item in listed.get("items") or []}
        for node, drivers in self.csi_drivers_by_node().items():
            current = existing.get(node)
            have = sorted(d["name"] for d in ((current.get("spec") or {}).get("drivers") or [])) if current else None
            if have == sorted(drivers) or (current is None and not drivers):
                continue
            body = {
                "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": node, "labels": {"rehearsal.trainium.eks/registered-by": "pod-runner"}},
                "spec": {"drivers": [{"name": driver, "nodeID": node} for driver in sorted(drivers)]},
            }
            try:
                if not drivers:
                    # The last node plugin went: no CSINode, as before any registered.
                    storage.delete_csi_node(node)
                elif current is None:
                    storage.create_csi_node(body, _preload_content=False)
                else:
                    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    storage.replace_csi_node(node, body, _preload_content=False)
                LOG.info("CSINode %s: drivers %s", node, sorted(drivers) or "none")
            except self.k8s.client.ApiException as error:
                LOG.warning("CSINode %s: %s", node, error.reason)

    def run(self):
        self.refresh_nodes()
        threading.Thread(target=self.watch, daemon=True).start()
        last_beat = 0.0
        last_csi = 0.0
        while True:
            try:
                kind, obj = self.events.get(timeout=1)
                self.handle(kind, obj)
            except queue.Empty:
                pass
            except Exception:  # pylint: disable=broad-except
                LOG.exception("handling a pod event")
            for uid in list(self.pods):
                try:
                    self.report_exit(uid)
                except Exception:  # pylint: disable=broad-except
                    LOG.exception("reporting the exit of %s", uid)
            if time.monotonic() - last_csi > 5:
                try:
                    self.refresh_nodes()
                    self.register_csi_drivers()
                except Exception:  # pylint: disable=broad-except
                    LOG.exception("registering CSI drivers")
                last_csi = time.monotonic()
            if self.heartbeat and time.monotonic() - last_beat > 2:
                self.heartbeat.write_text(f"{time.time()}\n")
                last_beat = time.monotonic()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="the daemon")
    run.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or str(state_dir() / "kubeconfig"))
    run.add_argument("--train-venv", default=os.environ.get("TRAINIUM_TRAIN_VENV") or str(ROOT / ".venv"))
    run.add_argument("--heartbeat", help="a file touched every 2 s while the runner is healthy")
    shim_parser = sub.add_parser("shim", help="(internal) run one pod's process")
    shim_parser.add_argument("pod_dir")
    kill = sub.add_parser("kill-worker", help="SIGKILL one worker process of a pod")
    kill.add_argument("namespace")
    kill.add_argument("pod")
    sub.add_parser("stop-all", help="kill every pod process")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if args.command == "shim":
        sys.exit(shim(args.pod_dir))
    if args.command == "kill-worker":
        print(kill_worker(args.namespace, args.pod))
        return
    if args.command == "stop-all":
        stopped = stop_all()
        print(f"pod runner: stopped the processes of {len(stopped)} pod(s)")
        return
    Runner(args.kubeconfig, args.train_venv, args.heartbeat).run()


if __name__ == "__main__":
    main()
