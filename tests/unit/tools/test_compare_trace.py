# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/compare-trace.py and the trace plugin the acceptance run records with."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import boto3

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "compare-trace.py"
PLUGIN_DIR = ROOT / "playbooks" / "files" / "aws_acceptance"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compare_trace = _load("compare_trace", TOOL)
trace_plugin = _load("trainium_aws_trace", PLUGIN_DIR / "trainium_aws_trace.py")


def write(path, calls):
    path.write_text("".join(json.dumps(call) + "\n" for call in calls), encoding="utf-8")
    return path


def call(operation, params=None, error=None, service="ec2"):
    return {"service": service, "operation": operation, "params": params or {}, "error": error}


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, check=False)


def test_ids_names_and_poll_counts_do_not_differ(tmp_path):
    first = write(tmp_path / "aws.jsonl", [
        call("CreateVpc", {"CidrBlock": "10.0.0.0/16", "TagSpecifications": [{"Tags": [{"Key": "trainium.eks/cluster", "Value": "trn-bert"}]}]}),
        call("CreateSubnet", {"VpcId": "vpc-0123456789abcdef0", "AvailabilityZoneId": "usw2-az1"}),
        call("DescribeNatGateways"), call("DescribeNatGateways"), call("DescribeNatGateways"),
        call("DescribeCluster", {"name": "trn-bert"}, service="eks"),
        call("CreateOpenIDConnectProvider", {"Url": "https://oidc.eks.us-east-1.amazonaws.com/id/8D3C6E1F2A9B4C0D5E7F8A1B2C3D4E5F"}, service="iam"),
    ])
    second = write(tmp_path / "rehearsal.jsonl", [
        call("CreateVpc", {"CidrBlock": "10.0.0.0/16", "TagSpecifications": [{"Tags": [{"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]}]}),
        call("CreateSubnet", {"VpcId": "vpc-9f8e7d6c", "AvailabilityZoneId": "usw2-az2"}),
        call("DescribeNatGateways"),
        call("DescribeCluster", {"name": "trn-rehearsal"}, service="eks"),
        call("CreateOpenIDConnectProvider", {"Url": "https://oidc.eks.us-west-2.amazonaws.com/id/a1b2c3d4e5"}, service="iam"),
    ])
    done = run(first, second, "--alias", "trn-bert=trn-rehearsal")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("7 and 5 calls; 0 difference(s)")


def test_a_missing_call_an_extra_call_and_an_error_are_listed(tmp_path):
    first = write(tmp_path / "aws.jsonl", [
        call("CreateNodegroup", {"nodegroupName": "trn-bert-trn1"}, error="InvalidParameterException", service="eks"),
        call("CreateNodegroup", {"nodegroupName": "trn-bert-trn1"}, service="eks"),
        call("DescribeCapacityReservations"),
    ])
    second = write(tmp_path / "rehearsal.jsonl", [
        call("CreateNodegroup", {"nodegroupName": "trn-bert-trn1"}, service="eks"),
        call("CreateNodegroup", {"nodegroupName": "trn-bert-trn1"}, service="eks"),
    ])
    done = run(first, second)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert "only in the first trace: ec2 DescribeCapacityReservations (ok)" in lines
    assert any(line.startswith("eks CreateNodegroup (InvalidParameterException)") and "1 call(s) in the first trace, 0 in the second" in line
               for line in lines)
    assert any(line.startswith("eks CreateNodegroup (ok)") and "1 call(s) in the first trace, 2 in the second" in line for line in lines)
    assert lines[-1] == "3 and 2 calls; 3 difference(s)"
    only_operations = run(first, second, "--operations-only")
    assert only_operations.returncode == 1
    assert "only in the first trace: eks CreateNodegroup (InvalidParameterException)" in only_operations.stdout


def test_an_unreadable_trace_is_rc_2_with_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"service": "ec2"}\n', encoding="utf-8")
    done = run(bad, bad)
    assert done.returncode == 2
    assert "bad.jsonl:1: not a trace line" in done.stderr


def test_the_plugin_records_a_call_with_its_error_and_without_secrets(tmp_path):
    """A real botocore client against a closed loopback port: the call fails, the line says how."""
    trace = tmp_path / "trace.jsonl"
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_DIR), BOTOCORE_EXPERIMENTAL__PLUGINS="t=trainium_aws_trace",
               TRAINIUM_AWS_TRACE=str(trace), AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    script = (
        "import boto3, botocore.config\n"
        "c = boto3.client('ec2', region_name='us-west-2', endpoint_url='http://127.0.0.1:9',"
        " config=botocore.config.Config(retries={'max_attempts': 1}, connect_timeout=1))\n"
        "try:\n"
        "    c.run_instances(ImageId='ami-1', MinCount=1, MaxCount=1, UserData='secret-script')\n"
        "except Exception as e:\n"
        "    print(type(e).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False, timeout=60)
    assert "EndpointConnectionError" in done.stdout, done.stderr
    (line,) = [json.loads(text) for text in trace.read_text(encoding="utf-8").splitlines()]
    assert (line["service"], line["operation"], line["error"]) == ("ec2", "RunInstances", "EndpointConnectionError")
    assert line["params"]["ImageId"] == "ami-1" and line["params"]["UserData"] == "<redacted>"
    assert "secret-script" not in trace.read_text(encoding="utf-8")
    assert boto3.__version__  # the plugin hook is botocore's: pinned with boto3 in requirements.txt


def test_redact_reaches_every_depth():
    redacted = trace_plugin.redact({"Tags": [{"Key": "a", "Value": "b"}], "Auth": {"SessionToken": "x", "Password": "y"}, "Blob": b"abc"})
    assert redacted == {"Tags": [{"Key": "a", "Value": "b"}], "Auth": {"SessionToken": "<redacted>", "Password": "<redacted>"},
                        "Blob": "<3 bytes>"}
