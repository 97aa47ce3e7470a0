# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""efa_launch_template run in-process, as ansible-core 2.19 would run it, against a stubbed EC2."""

from __future__ import annotations

import json

import pytest
from botocore.stub import Stubber

from ansible.module_utils.testing import patch_module_args
from ansible_collections.trainium.eks.plugins.module_utils import trainium_launch_template as lt
from ansible_collections.trainium.eks.plugins.modules import efa_launch_template


CONNECTION = {
    "region": "us-west-2",
    "access_key": "AKIAIOSFODNN7EXAMPLE",
    "secret_key": "not-a-real-secret",
    "endpoint_url": "http://127.0.0.1:1",
}
NAME = "trn-rehearsal-trn1"
SG = "sg-0123456789abcdef0"
TEMPLATE = {"LaunchTemplateId": "lt-0123456789abcdef0", "LaunchTemplateName": NAME, "DefaultVersionNumber": 1, "LatestVersionNumber": 1,
            "Tags": [{"Key": "ManagedBy", "Value": "trainium.eks"}]}


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL", "AWS_URL", "EC2_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stubbed(monkeypatch):
    """Let module.client() build the real client, then answer its calls from a plan."""
    holder = {"plan": []}
    real_client = efa_launch_template.AnsibleAWSModule.client

    def client(module, service, retry_decorator=None, **extra):
        conn = real_client(module, service, retry_decorator=retry_decorator, **extra)
        stubber = holder["stubber"] = Stubber(conn)
        for method, payload, params in holder["plan"]:
            if isinstance(payload, str):
                stubber.add_client_error(method, payload, expected_params=params)
            else:
                stubber.add_response(method, payload, params)
        stubber.activate()
        return conn

    monkeypatch.setattr(efa_launch_template.AnsibleAWSModule, "client", client)
    yield holder
    if "stubber" in holder:
        holder["stubber"].assert_no_pending_responses()
        holder["stubber"].deactivate()


def _run(capsys, args):
    capsys.readouterr()
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exited:
            efa_launch_template.main()
    return exited.value.code, json.loads(capsys.readouterr().out)


def _args(**extra):
    args = dict(CONNECTION, name=NAME, efa_interfaces=8, security_group_ids=[SG], tags={"ManagedBy": "trainium.eks"})
    args.update(extra)
    return args


def test_check_mode_on_a_missing_template_reports_create_with_diff(capsys, stubbed):
    stubbed["plan"] = [("describe_launch_templates", "InvalidLaunchTemplateName.NotFoundException", {"LaunchTemplateNames": [NAME]})]
    rc, result = _run(capsys, _args(_ansible_check_mode=True, _ansible_diff=True))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["launch_template"] == {}
    assert result["diff"]["before"] == {}
    # The ENA primary and 8 EFA-only interfaces.
    assert len(result["diff"]["after"]["NetworkInterfaces"]) == 9


def test_unchanged_template_returns_its_ids_and_no_change(capsys, stubbed):
    data = lt.build_launch_template_data(dict(_args(), root_volume_size=500, metadata_hop_limit=1))
    stubbed["plan"] = [
        ("describe_launch_templates", {"LaunchTemplates": [TEMPLATE]}, {"LaunchTemplateNames": [NAME]}),
        ("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": data}]},
         {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]}),
    ]
    rc, result = _run(capsys, _args())
    assert rc == 0, result
    assert result["changed"] is False
    assert result["launch_template"] == {"id": "lt-0123456789abcdef0", "name": NAME, "default_version": 1, "latest_version": 1,
                                         "efa_interfaces": 8, "tags": {"ManagedBy": "trainium.eks"}}


def test_absent_on_a_missing_template_is_fine(capsys, stubbed):
    stubbed["plan"] = [("describe_launch_templates", "InvalidLaunchTemplateName.NotFoundException", {"LaunchTemplateNames": [NAME]})]
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, state="absent"))
    assert rc == 0, result
    assert result["changed"] is False


def test_bad_values_fail_before_any_call(capsys, stubbed):
    rc, result = _run(capsys, _args(efa_interfaces=40, root_volume_size=19))
    assert rc == 1
    assert result["errors"] == [
        "efa_interfaces: got 40; allowed: an integer from 0 to 32 (EFA interfaces, one per network card; 0 for a type without EFA)",
        "root_volume_size: got 19; allowed: an integer from 20 to 16384 (GiB)",
    ]
    assert "stubber" not in stubbed


def test_present_needs_efa_interfaces(capsys, stubbed):
    rc, result = _run(capsys, dict(CONNECTION, name=NAME, security_group_ids=[SG]))
    assert rc == 1
    assert "efa_interfaces" in result["msg"]


def test_instance_type_added_to_an_existing_template_makes_a_new_default_version(capsys, stubbed):
    without = lt.build_launch_template_data(dict(_args(), root_volume_size=500, metadata_hop_limit=1))
    wanted = dict(without, InstanceType="trn1.32xlarge")
    stubbed["plan"] = [
        ("describe_launch_templates", {"LaunchTemplates": [TEMPLATE]}, {"LaunchTemplateNames": [NAME]}),
        ("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": without}]},
         {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]}),
        ("create_launch_template_version", {"LaunchTemplateVersion": {"VersionNumber": 2}},
         {"LaunchTemplateId": "lt-0123456789abcdef0", "LaunchTemplateData": wanted}),
        ("modify_launch_template", {"LaunchTemplate": dict(TEMPLATE, DefaultVersionNumber=2, LatestVersionNumber=2)},
         {"LaunchTemplateId": "lt-0123456789abcdef0", "DefaultVersion": "2"}),
        ("describe_launch_templates", {"LaunchTemplates": [dict(TEMPLATE, DefaultVersionNumber=2, LatestVersionNumber=2)]},
         {"LaunchTemplateNames": [NAME]}),
    ]
    rc, result = _run(capsys, _args(instance_type="trn1.32xlarge", _ansible_diff=True))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["launch_template"]["default_version"] == 2
    assert "InstanceType" not in result["diff"]["before"]
    assert result["diff"]["after"]["InstanceType"] == "trn1.32xlarge"


def test_default_hop_limit_is_1_and_replaces_the_old_default_2(capsys, stubbed):
    """IMDSv2 tokens required and hop limit 1: pods outside the host network cannot reach the node role's credentials."""
    old = lt.build_launch_template_data(dict(_args(), root_volume_size=500, metadata_hop_limit=2))
    wanted = lt.build_launch_template_data(dict(_args(), root_volume_size=500, metadata_hop_limit=1))
    assert wanted["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1, "HttpEndpoint": "enabled"}
    stubbed["plan"] = [
        ("describe_launch_templates", {"LaunchTemplates": [TEMPLATE]}, {"LaunchTemplateNames": [NAME]}),
        ("describe_launch_template_versions", {"LaunchTemplateVersions": [{"LaunchTemplateData": old}]},
         {"LaunchTemplateId": "lt-0123456789abcdef0", "Versions": ["$Default"]}),
        ("create_launch_template_version", {"LaunchTemplateVersion": {"VersionNumber": 2}},
         {"LaunchTemplateId": "lt-0123456789abcdef0", "LaunchTemplateData": wanted}),
        ("modify_launch_template", {"LaunchTemplate": dict(TEMPLATE, DefaultVersionNumber=2, LatestVersionNumber=2)},
         {"LaunchTemplateId": "lt-0123456789abcdef0", "DefaultVersion": "2"}),
        ("describe_launch_templates", {"LaunchTemplates": [dict(TEMPLATE, DefaultVersionNumber=2, LatestVersionNumber=2)]},
         {"LaunchTemplateNames": [NAME]}),
    ]
    rc, result = _run(capsys, _args(_ansible_diff=True))
    assert rc == 0, result
    assert result["changed"] is True
    assert result["diff"]["before"]["MetadataOptions"]["HttpPutResponseHopLimit"] == 2
    assert result["diff"]["after"]["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
