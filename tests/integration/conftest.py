# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures for tests that run the collection against the rehearsal services.

The services are the real ones `make rehearsal-up` starts (moto server for the
AWS APIs so far). When they are not running, the session starts them and
stops them again at the end.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import urllib.request

import boto3
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
REHEARSAL = ROOT / "tools" / "rehearsal" / "rehearsal.sh"
VENV_BIN = pathlib.Path(os.environ.get("VENV", ROOT / ".venv")) / "bin"
LOCAL_VARS = ROOT / "inventories" / "local" / "group_vars" / "all" / "deployment.yml"


def _read_env_file(path):
    """The whole environment as bash sees it after sourcing env.sh (PATH expanded, unset honoured)."""
    dump = subprocess.run(
        ["bash", "-c", 'source "$1" && env -0', "env.sh", str(path)],
        capture_output=True, check=True,
    ).stdout.decode()
    return dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)


@pytest.fixture(scope="session")
def rehearsal():
    """The rehearsal's environment (endpoint, fake credentials), started if needed."""
    started = subprocess.run([str(REHEARSAL), "status"], capture_output=True, check=False).returncode != 0
    if started:
        subprocess.run([str(REHEARSAL), "up"], check=True)
    state = pathlib.Path(os.environ.get("TRAINIUM_REHEARSAL_DIR", ROOT / ".rehearsal"))
    env = _read_env_file(state / "env.sh")
    yield env
    if started:
        subprocess.run([str(REHEARSAL), "down"], check=True)


@pytest.fixture()
def aws(rehearsal):
    """A clean AWS account: moto is reset before each test."""
    endpoint = rehearsal["AWS_ENDPOINT_URL"]
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
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

    def client(self, service):
        return self.session.client(service, endpoint_url=self.env["AWS_ENDPOINT_URL"])

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


class PlaybookResult:
    def __init__(self, completed):
        self.rc = completed.returncode
        self.output = completed.stdout + completed.stderr
        # The YAML callback folds long messages; compare against one line.
        self.text = " ".join(self.output.split())

    def __repr__(self):
        return f"PlaybookResult(rc={self.rc})\n{self.output[-4000:]}"


@pytest.fixture()
def run_playbook(rehearsal, tmp_path):
    """Run a playbook of this checkout on an inventory, with extra vars."""

    def run(playbook, inventory="inventories/local", extra_vars=None, args=()):
        cmd = [str(VENV_BIN / "ansible-playbook"), playbook, "-i", inventory]
        if extra_vars is not None:
            vars_file = tmp_path / "extra_vars.json"
            vars_file.write_text(json.dumps(extra_vars))
            cmd += ["-e", f"@{vars_file}"]
        cmd += list(args)
        env = dict(rehearsal)
        env.update(ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
        completed = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        return PlaybookResult(completed)

    return run


@pytest.fixture(scope="session")
def local_vars():
    """The local inventory's deployment variables (a fresh copy per use)."""
    data = yaml.safe_load(LOCAL_VARS.read_text())
    data.pop("trainium_aws_endpoint_url", None)
    return data
