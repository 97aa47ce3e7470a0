# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures shared by the suites that run against the rehearsal services.

tests/integration (modules, roles and playbooks of the collection) and
tests/rehearsal (the rehearsal itself) use the real services that
`tools/rehearsal/rehearsal.sh up` starts. One copy of each helper lives here:

- ``rehearsal``: the environment of a shell that sourced the rehearsal's
  env.sh, with the AWS endpoint of the moto this test may reset;
  ``shared_rehearsal`` is the shared stack's environment as it is.
- ``aws``: a clean AWS account (moto reset) and boto3 clients for it.
- ``run_playbook``: ansible-playbook of this checkout; its result parses the
  PLAY RECAP (``result.recap``, ``result.recaps``) and names the tasks that
  changed.
- ``kube``: the rehearsal's Kubernetes (Python client, kubectl, fault.sh).
- ``wait_until``: polling that says what it waited for when it times out.

Parallel runs (pytest-xdist, `pytest -n N --dist loadgroup`, as pytest.ini
sets): every worker starts a private moto server (TRAINIUM_REHEARSAL_SERVICES=
moto, a TRAINIUM_REHEARSAL_DIR and a free TRAINIUM_MOTO_PORT of its own), so
resetting it disturbs no other worker. The EKS token authenticator and the
kube-apiserver belong to the shared stack and know the clusters of the shared
moto only: a test that reaches Kubernetes through an EKS token (the
eks_cluster role, full playbook runs) is marked
``@pytest.mark.xdist_group("shared_stack")``, gets the shared moto, and runs
on one worker, one test after another. Other groups (``shared_kube``,
``registry``) keep tests that change the shared cluster's nodes or processes
or the registry's storage from running at the same time. Without xdist
everything uses the shared stack, one test after another, as before.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import time
import types
import urllib.parse
import urllib.request

import boto3
import botocore.config
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
REHEARSAL = ROOT / "tools" / "rehearsal" / "rehearsal.sh"
FAULT = ROOT / "tools" / "rehearsal" / "fault.sh"
VENV_BIN = pathlib.Path(os.environ.get("VENV", ROOT / ".venv")) / "bin"
LOCAL_VARS = ROOT / "inventories" / "local" / "group_vars" / "all" / "deployment.yml"
SHARED_STACK = "shared_stack"
# Groups scheduled first: their tests run one after another on one worker, so
# the longest serial chain should start at once.
GROUP_ORDER = (SHARED_STACK, "shared_kube", "registry")
# What a private moto replaces in the shared environment.
PRIVATE_MOTO_KEYS = ("AWS_ENDPOINT_URL", "TRAINIUM_AWS_ENDPOINT_URL")
# The strategy of the suite's playbook and module runs: Ansible's linear through Mitogen for Ansible
# (tools/ansible/strategy/mitogen_linear.py: the same plays at about two thirds of the CPU), or Ansible's own with
# TRAINIUM_TEST_STRATEGY=linear. The runs through ansible-runner (AWX) set their own environment and keep linear.
TEST_STRATEGY = os.environ.get("TRAINIUM_TEST_STRATEGY", "mitogen_linear")
STRATEGY_ENV = {"ANSIBLE_STRATEGY_PLUGINS": str(ROOT / "tools" / "ansible" / "strategy"), "ANSIBLE_STRATEGY": TEST_STRATEGY}


def _xdist_worker():
    """The xdist worker id (gw0, gw1, ...), or None when tests run in one process."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def _group(item):
    marker = item.get_closest_marker("xdist_group")
    return (marker.args[0] if marker.args else marker.kwargs.get("name")) if marker else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The grouped tests first (shared_stack, then the others), the rest in collection order.

    On an xdist worker with --dist loadgroup, also give each grouped item the
    node id suffix `@<group>` that the controller schedules by. xdist 3.8
    writes it to ``item._nodeid``, which pytest 9 no longer reads (the id is
    ``item._id``, a NodeId), so without this every group is silently spread
    over all workers (seen: the shared_stack tests on three workers at once).
    """
    rank = {name: i for i, name in enumerate(GROUP_ORDER)}
    items.sort(key=lambda item: rank.get(_group(item), len(GROUP_ORDER)))
    if not (_xdist_worker() and getattr(config.option, "loadgroup", False)):
        return
    from _pytest.nodeid import NodeId  # pylint: disable=import-outside-toplevel

    for item in items:
        group = _group(item)
        if group and "@" not in item.nodeid and isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(f"{item.nodeid}@{group}")  # pylint: disable=protected-access


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    """With TRAINIUM_TEST_CPU_LOG=PREFIX, one line per test in PREFIX-<worker>.tsv: the node id, its wall seconds
    and the CPU seconds of this process and of the child processes it waited for during the test
    (ansible-playbook and its module processes; not the rehearsal's services). tools/test-cpu.py sums them."""
    prefix = os.environ.get("TRAINIUM_TEST_CPU_LOG")
    if not prefix:
        yield
        return
    before, started = os.times(), time.monotonic()
    yield
    after, wall = os.times(), time.monotonic() - started
    own = after.user + after.system - before.user - before.system
    children = after.children_user + after.children_system - before.children_user - before.children_system
    try:
        with open(f"{prefix}-{_xdist_worker() or 'main'}.tsv", "a", encoding="utf-8") as log:
            log.write(f"{item.nodeid}\t{wall:.2f}\t{own:.2f}\t{children:.2f}\n")
    except OSError as e:  # a figure lost, never the test run
        print(f"TRAINIUM_TEST_CPU_LOG: {e}", file=sys.stderr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # pylint: disable=unused-argument
    """``item.call_passed``: whether the test's own call passed, for fixtures that tell the tests that ran whole
    (test_site_end_to_end.py's ``step``)."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.call_passed = report.passed


@pytest.fixture(autouse=True)
def _one_test_of_a_group_at_a_time(request, tmp_path_factory):
    """Hold an inter-worker lock per xdist group for the whole test (its function fixtures included).

    The scheduler already keeps a group on one worker; the lock makes sure of
    it whatever the scheduler does, since the tests of a group share a moto,
    nodes or storage that they reset or change.
    """
    group = _group(request.node)
    if not (group and _xdist_worker()):
        yield
        return
    with _lock(tmp_path_factory.getbasetemp().parent / f"group-{group}.lock"):
        yield


@pytest.fixture(scope="session")
def group_lock(tmp_path_factory):
    """``with group_lock("shared_kube"):`` - hold another group's inter-worker lock for a part of a test.

    For a test of one group that, for a moment, changes what another group's
    tests share (a shared_stack test that takes a fake node's devices away).
    """
    def hold(group):
        if not _xdist_worker():
            return contextlib.nullcontext()
        return _lock(tmp_path_factory.getbasetemp().parent / f"group-{group}.lock")

    return hold


def _read_env_file(path, base=None):
    """The whole environment as bash sees it after sourcing env.sh (PATH expanded, unset honoured)."""
    dump = subprocess.run(
        ["bash", "-c", 'source "$1" && env -0', "env.sh", str(path)],
        capture_output=True, check=True, env=base,
    ).stdout.decode()
    return dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)


@contextlib.contextmanager
def _lock(path):
    with open(path, "w", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stack_answers(state):
    """Whether the stack of ``state`` runs: its env.sh exists, moto and kube-apiserver accept connections.

    Cheaper than `rehearsal.sh status`, whose moto check reads all of moto's
    state and can time out on a busy machine; a false "not running" would make
    a test session restart (and later stop) a stack that other tests use.
    """
    env_file = state / "env.sh"
    if not env_file.is_file():
        return False
    env = _read_env_file(env_file)
    try:
        server = yaml.safe_load(pathlib.Path(env["KUBECONFIG"]).read_text())["clusters"][0]["cluster"]["server"]
        for url in (env["AWS_ENDPOINT_URL"], server):
            host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
            socket.create_connection((host, port), timeout=5).close()
    except (KeyError, OSError, TypeError, IndexError):
        return False
    return True


@pytest.fixture(scope="session")
def shared_rehearsal(tmp_path_factory):
    """The shared rehearsal's environment (endpoints, fake credentials), started if needed.

    In one process the session also stops what it started. xdist workers start
    it under a lock (one `up` at a time) and leave it running: another worker
    may still use it.
    """
    env = {key: value for key, value in os.environ.items() if key != "TRAINIUM_REHEARSAL_SERVICES"}
    state = pathlib.Path(env.get("TRAINIUM_REHEARSAL_DIR", ROOT / ".rehearsal"))
    started = False
    lock = tmp_path_factory.getbasetemp().parent / "rehearsal-up.lock"
    with _lock(lock) if _xdist_worker() else contextlib.nullcontext():
        if not _stack_answers(state):
            subprocess.run([str(REHEARSAL), "up"], env=env, check=True)
            started = not _xdist_worker()
    yield _read_env_file(state / "env.sh")
    if started:
        subprocess.run([str(REHEARSAL), "down"], env=env, check=True)


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def private_moto(shared_rehearsal, tmp_path_factory):
    """This xdist worker's own moto server: {variable: value} to put over the shared environment.

    Its EKS answers point at the shared kube-apiserver and CA, like the shared
    moto's (the authenticator still only knows the shared moto's clusters).
    """
    state = tmp_path_factory.mktemp(f"moto-{_xdist_worker()}")
    (state / "pki").symlink_to(pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "pki")
    # Its ECR answers with the shared registry (tools/rehearsal/moto_ext_ecr.py reads the password there).
    (state / "registry").symlink_to(pathlib.Path(shared_rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "registry")
    env = dict(os.environ, TRAINIUM_REHEARSAL_SERVICES="moto", TRAINIUM_REHEARSAL_DIR=str(state), TRAINIUM_MOTO_PORT=str(_free_port()),
               TRAINIUM_REHEARSAL_REGISTRY=shared_rehearsal.get("TRAINIUM_REGISTRY", ""))
    up = subprocess.run([str(REHEARSAL), "up"], env=env, capture_output=True, text=True, check=False)
    assert up.returncode == 0, f"the private moto of {_xdist_worker()} did not start:\n{up.stdout}{up.stderr}"
    private = _read_env_file(state / "env.sh", base=env)
    # TRAINIUM_REHEARSAL_MOTO_DIR: its state directory (aws-time-scale, tools/rehearsal/moto_ext_timing.py).
    yield {**{key: private[key] for key in PRIVATE_MOTO_KEYS}, "TRAINIUM_REHEARSAL_MOTO_DIR": str(state)}
    subprocess.run([str(REHEARSAL), "down"], env=env, capture_output=True, check=False)


@pytest.fixture()
def rehearsal(request, shared_rehearsal):
    """The rehearsal's environment for this test: the shared stack, with this worker's own moto unless
    the test is in the shared_stack group (or tests run in one process)."""
    if not _xdist_worker() or _group(request.node) == SHARED_STACK:
        return dict(shared_rehearsal)
    return dict(shared_rehearsal, **request.getfixturevalue("private_moto"))


def reset_moto(env):
    """Empty the AWS account of ``env``'s moto server (its AWS_ENDPOINT_URL)."""
    request = urllib.request.Request(f"{env['AWS_ENDPOINT_URL']}/moto-api/reset", method="POST")
    # A reset of a moto that holds a whole deployment, on two cores that three test workers share, can take
    # longer than a few seconds: a slow reset must not turn into a test error.
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert answer.status == 200


@pytest.fixture()
def aws(rehearsal):
    """A clean AWS account: moto is reset before each test."""
    reset_moto(rehearsal)
    return AwsAccount(rehearsal)


class AwsAccount:
    """boto3 clients for the rehearsal account and a listing of what exists in it."""

    def __init__(self, env, region="us-west-2"):
        self.env = env
        self.region = region
        self.session = boto3.session.Session(
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=region,
        )

    def client(self, service, validate=True):
        """A client of the rehearsal's endpoint; ``validate=False`` sends what botocore would refuse (a test of the server's own checks)."""
        config = None if validate else botocore.config.Config(parameter_validation=False)
        return self.session.client(service, endpoint_url=self.env["AWS_ENDPOINT_URL"], config=config)

    @staticmethod
    def control_plane_log_types(cluster):
        """The control plane log types an EKS cluster (describe_cluster's answer) has on, sorted."""
        return sorted(t for entry in cluster["logging"]["clusterLogging"] if entry.get("enabled") for t in entry["types"])

    def log_group(self, name):
        """The CloudWatch log group of exactly that name, or None."""
        found = [g for g in self.client("logs").describe_log_groups(logGroupNamePrefix=name)["logGroups"] if g["logGroupName"] == name]
        return found[0] if found else None

    def secrets_key(self, cluster):
        """The KMS key metadata of an EKS cluster's envelope encryption, which must cover secrets."""
        (config,) = cluster["encryptionConfig"]
        assert config["resources"] == ["secrets"]
        return self.client("kms").describe_key(KeyId=config["provider"]["keyArn"])["KeyMetadata"]

    def resources(self):
        """Everything the collection could create, by kind; defaults left out."""
        ec2 = self.client("ec2")
        default_vpcs = {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if v.get("IsDefault")}
        found = {
            "vpcs": [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")],
            "subnets": [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if not s.get("DefaultForAz")],
            "security_groups": [g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"] if g["GroupName"] != "default"],
            "launch_templates": [t["LaunchTemplateId"] for t in ec2.describe_launch_templates()["LaunchTemplates"]],
            "instances": [i["InstanceId"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]],
            "capacity_reservations": [
                r["CapacityReservationId"] for r in ec2.describe_capacity_reservations()["CapacityReservations"]
                if r["State"] != "cancelled"
            ],
            "internet_gateways": [g["InternetGatewayId"] for g in ec2.describe_internet_gateways()["InternetGateways"]
                                  if not any(a.get("VpcId") in default_vpcs for a in g.get("Attachments", []))],
            "nat_gateways": [n["NatGatewayId"] for n in ec2.describe_nat_gateways()["NatGateways"] if n["State"] not in ("deleted", "deleting")],
            "elastic_ips": [a.get("AllocationId") for a in ec2.describe_addresses()["Addresses"]],
            "route_tables": [t["RouteTableId"] for t in ec2.describe_route_tables()["RouteTables"]
                             if t["VpcId"] not in default_vpcs and not any(a.get("Main") for a in t.get("Associations", []))],
            "placement_groups": [g["GroupName"] for g in ec2.describe_placement_groups()["PlacementGroups"]],
            "eks_clusters": self.client("eks").list_clusters()["clusters"],
            "eks_nodegroups": [f"{c}/{n}" for c in self.client("eks").list_clusters()["clusters"]
                               for n in self.client("eks").list_nodegroups(clusterName=c)["nodegroups"]],
            "oidc_providers": [p["Arn"] for p in self.client("iam").list_open_id_connect_providers()["OpenIDConnectProviderList"]],
            "stacks": [s["StackName"] for s in self.client("cloudformation").describe_stacks()["Stacks"]],
            "ecr_repositories": [r["repositoryName"] for r in self.client("ecr").describe_repositories()["repositories"]],
            "fsx_file_systems": [f["FileSystemId"] for f in self.client("fsx").describe_file_systems()["FileSystems"]],
            "iam_roles": [r["RoleName"] for r in self.client("iam").list_roles()["Roles"]],
            "s3_buckets": [b["Name"] for b in self.client("s3").list_buckets()["Buckets"]],
        }
        return {kind: sorted(ids) for kind, ids in found.items()}


_RECAP_LINE = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$")


def parse_recap(output):
    """PLAY RECAP of an ansible-playbook output: {host: {"ok": n, "changed": n, "unreachable": n, "failed": n,
    "skipped": n, "rescued": n, "ignored": n}} (the last recap when there are several)."""
    _before, found, after = output.rpartition("PLAY RECAP")
    assert found, f"no PLAY RECAP in the output:\n{output[-3000:]}"
    hosts = {}
    for line in after.splitlines():
        match = _RECAP_LINE.match(line.strip())
        if match:
            hosts[match.group(1)] = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", match.group(2))}
    assert hosts, f"PLAY RECAP lists no host:\n{after[:3000]}"
    return hosts


class PlaybookResult:
    """One ansible-playbook run: rc, output, the output on one line (text) and its PLAY RECAP."""

    def __init__(self, completed, host="localhost"):
        self.rc = completed.returncode
        self.output = completed.stdout + completed.stderr
        # The YAML callback folds long messages; compare against one line.
        self.text = " ".join(self.output.split())
        self.host = host

    @property
    def recaps(self):
        """The PLAY RECAP counts of every host."""
        return parse_recap(self.output)

    @property
    def recap(self):
        """The PLAY RECAP counts of localhost: ok, changed, unreachable, failed, skipped, rescued, ignored."""
        return self.recaps[self.host]

    @property
    def changed_tasks(self):
        """The names of the tasks that reported changed, to explain a non-idempotent run."""
        names = []
        current = None
        for line in self.output.splitlines():
            if line.startswith("TASK ["):
                current = line[6:].split("]")[0]
            elif line.startswith("changed:") and current:
                names.append(current)
        return names

    def __repr__(self):
        return f"PlaybookResult(rc={self.rc})\n{self.output[-4000:]}"


def playbook_env(rehearsal):
    return dict(rehearsal, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", **STRATEGY_ENV)


def playbook_runner(env, tmp_dir, default_timeout=300):
    """``run(playbook, inventory=..., extra_vars=None, args=(), timeout=default_timeout)``: ansible-playbook of this
    checkout with the environment ``env`` (read at each run: a recorder set up later still applies); ``run.env`` is
    that environment."""

    def run(playbook, inventory="inventories/local", extra_vars=None, args=(), timeout=None):
        timeout = timeout or default_timeout
        cmd = [str(VENV_BIN / "ansible-playbook"), playbook, "-i", inventory]
        if extra_vars is not None:
            vars_file = pathlib.Path(tmp_dir) / "extra_vars.json"
            vars_file.write_text(json.dumps(extra_vars))
            cmd += ["-e", f"@{vars_file}"]
        cmd += list(args)
        completed = subprocess.run(cmd, cwd=ROOT, env=playbook_env(env), capture_output=True, text=True, timeout=timeout, check=False)
        return PlaybookResult(completed)

    run.env = playbook_env(env)
    return run


@pytest.fixture()
def run_playbook(rehearsal, tmp_path):
    """Run a playbook of this checkout on an inventory, with extra vars (playbook_runner)."""
    return playbook_runner(rehearsal, tmp_path)


@pytest.fixture(scope="module")
def module_stack(shared_rehearsal, tmp_path_factory):
    """For a module whose tests read one build on the shared stack (group shared_stack): the shared moto reset once,
    then ``.env`` (its environment, a copy), ``.aws`` (AwsAccount), ``.run`` (playbook_runner) and ``.tmp``."""
    env = dict(shared_rehearsal)
    tmp = tmp_path_factory.mktemp("module-stack")
    reset_moto(env)
    # A stage's run on a whole deployment, on two cores that every other worker shares, can take minutes (a CI run's
    # teardown outlasted 300 s): 15 minutes per run unless the test says otherwise.
    return types.SimpleNamespace(env=env, aws=AwsAccount(env), run=playbook_runner(env, tmp, default_timeout=900), tmp=tmp)


@pytest.fixture()
def run_module(rehearsal):
    """Run one module of the collection on localhost (ansible ad hoc, JSON callback); its result for localhost."""

    def run(module, module_args, check=False, env=None, timeout=180):
        process_env = dict(env if env is not None else rehearsal)
        process_env.update(ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
                           **STRATEGY_ENV)
        cmd = [str(VENV_BIN / "ansible"), "localhost", "-i", "inventories/local", "-m", module, "-a", json.dumps(module_args)]
        if check:
            cmd.append("--check")
        completed = subprocess.run(cmd, cwd=ROOT, env=process_env, capture_output=True, text=True, timeout=timeout, check=False)
        report = json.loads(completed.stdout)
        return report["plays"][0]["tasks"][0]["hosts"]["localhost"]

    return run


@pytest.fixture(scope="session")
def local_vars():
    """The local inventory's deployment variables (a fresh copy per use)."""
    data = yaml.safe_load(LOCAL_VARS.read_text())
    data.pop("trainium_aws_endpoint_url", None)
    return data


def _wait_until(probe, timeout=60, what=None, interval=1.0, explain=None):
    """Poll probe() until it returns something truthy and return that; on timeout fail saying what was
    awaited (``what``, else the probe's docstring), the last value seen and explain()'s output."""
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            details = explain() if explain else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what or probe.__doc__ or probe}; last seen: {last!r}\n{details}")
        time.sleep(interval)


@pytest.fixture(scope="session")
def wait_until():
    """``wait_until(probe, timeout=60, what=None, interval=1.0, explain=None)``: see _wait_until."""
    return _wait_until


class Kube:
    """The shared rehearsal's Kubernetes, as its admin: the Python client and kubectl (KUBECONFIG of env.sh)."""

    def __init__(self, env, tmp_dir):
        import kubernetes  # pylint: disable=import-outside-toplevel

        self.kubernetes = kubernetes
        self.env = dict(env)
        self.tmp_dir = tmp_dir
        self.kubectl_path = str(pathlib.Path(env["TRAINIUM_REHEARSAL_DIR"]) / "bin" / "kubectl")
        self.api = kubernetes.config.new_client_from_config(config_file=env["KUBECONFIG"])
        self.core = kubernetes.client.CoreV1Api(self.api)

    def kubectl(self, *args, stdin=None, check=True, timeout=120):
        completed = subprocess.run([self.kubectl_path, *args], input=stdin, env=self.env, capture_output=True, text=True,
                                   timeout=timeout, check=False)
        if check and completed.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{completed.stdout}{completed.stderr}")
        return completed

    def json(self, *args):
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def apply(self, obj, namespace=None):
        self.kubectl(*(["-n", namespace] if namespace else []), "apply", "-f", "-", stdin=json.dumps(obj))

    def fault(self, *args):
        completed = subprocess.run([str(FAULT), *args], env=self.env, capture_output=True, text=True, timeout=120, check=False)
        assert completed.returncode == 0, completed.stdout + completed.stderr
        return completed.stdout

    def describe_pods(self, namespace, selector):
        return self.kubectl("-n", namespace, "describe", "pods", "-l", selector, check=False).stdout

    def eks_client(self, cluster, token):
        """A client built only from EKS DescribeCluster's answer (endpoint, base64 CA) and a bearer token."""
        ca = self.tmp_dir / f"ca-{cluster['name']}.crt"
        ca.write_bytes(base64.b64decode(cluster["certificateAuthority"]["data"]))
        config = self.kubernetes.client.Configuration()
        config.host = cluster["endpoint"]
        config.ssl_ca_cert = str(ca)
        config.api_key = {"authorization": f"Bearer {token}"}
        return self.kubernetes.client.ApiClient(config)


@pytest.fixture(scope="session")
def kube(shared_rehearsal, tmp_path_factory):
    """The shared rehearsal's Kubernetes (see Kube)."""
    return Kube(shared_rehearsal, tmp_path_factory.mktemp("kube"))
