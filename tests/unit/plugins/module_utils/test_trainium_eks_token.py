# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""EKS tokens made by trainium_eks_token: URL shape, signature, expiry, ExecCredential, the exec command."""

from __future__ import annotations

import datetime
import importlib.util
import json
import pathlib
import subprocess
import sys
import urllib.parse

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks_token as eks_token

ROOT = pathlib.Path(__file__).resolve().parents[4]
HELPER = ROOT / "plugins" / "module_utils" / "trainium_eks_token.py"
_SPEC = importlib.util.spec_from_file_location("eks_authenticator", ROOT / "tools" / "rehearsal" / "eks_authenticator.py")
authenticator = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(authenticator)

ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET = "not-a-real-secret-key"
NOW = datetime.datetime(2026, 11, 30, 12, 0, 0, tzinfo=datetime.timezone.utc)


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_STS_REGIONAL_ENDPOINTS",
                 "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


def client(endpoint_url=None, region="us-west-2"):
    return eks_token.sts_client(region, endpoint_url=endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET)


def query_of(token):
    url = urllib.parse.urlsplit(eks_token.url_from_token(token))
    return url, dict(urllib.parse.parse_qsl(url.query))


def test_token_is_a_presigned_get_caller_identity_on_the_regional_sts():
    token = eks_token.make_token(client(), "trn-rehearsal", now=NOW)["token"]
    assert token.startswith("k8s-aws-v1.")
    assert "=" not in token
    url, query = query_of(token)
    assert (url.scheme, url.netloc, url.path) == ("https", "sts.us-west-2.amazonaws.com", "/")
    assert query["Action"] == "GetCallerIdentity"
    assert query["Version"] == "2011-06-15"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-SignedHeaders"] == "host;x-k8s-aws-id"
    assert query["X-Amz-Credential"].startswith(ACCESS_KEY + "/")
    assert query["X-Amz-Credential"].endswith("/us-west-2/sts/aws4_request")


def test_other_region_and_endpoint_url():
    _url, query = query_of(eks_token.make_token(client(region="us-east-2"), "c")["token"])
    assert query["X-Amz-Credential"].endswith("/us-east-2/sts/aws4_request")
    url, _query = query_of(eks_token.make_token(client("http://127.0.0.1:5000"), "c")["token"])
    assert url.netloc == "127.0.0.1:5000"


def test_signature_covers_the_cluster_name():
    """The authenticator recomputes SigV4 with x-k8s-aws-id: only the named cluster matches."""
    token = eks_token.make_token(client("http://127.0.0.1:5000"), "trn-rehearsal")["token"]
    user, access_key, cluster = authenticator.review(token, SECRET, {"127.0.0.1:5000"}, ["other", "trn-rehearsal"])
    assert (user, access_key, cluster) == ("rehearsal-admin", ACCESS_KEY, "trn-rehearsal")
    with pytest.raises(authenticator.TokenError, match="does not match any cluster"):
        authenticator.review(token, SECRET, {"127.0.0.1:5000"}, ["other"])
    with pytest.raises(authenticator.TokenError, match="does not match"):
        authenticator.review(token, "another-secret", {"127.0.0.1:5000"}, ["trn-rehearsal"])


def test_the_header_does_not_leak_into_later_calls():
    """After a token, the same client presigns plain GetCallerIdentity URLs again."""
    sts = client()
    eks_token.make_token(sts, "first")
    plain = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60, HttpMethod="GET")
    assert dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(plain).query))["X-Amz-SignedHeaders"] == "host"
    token = eks_token.make_token(sts, "second")["token"]
    assert authenticator.review(token, SECRET, {"sts.us-west-2.amazonaws.com"}, ["first", "second"])[2] == "second"


def test_empty_cluster_name_is_refused():
    with pytest.raises(ValueError, match="cluster_name"):
        eks_token.make_token(client(), "")


def test_expiration_is_fourteen_minutes_after_signing():
    assert eks_token.make_token(client(), "c", now=NOW)["expiration"] == "2026-11-30T12:14:00Z"
    assert eks_token.expiration_for(NOW) - NOW == datetime.timedelta(minutes=14)


def test_timestamp_is_utc_with_z():
    tokyo = datetime.timezone(datetime.timedelta(hours=9))
    assert eks_token.format_timestamp(datetime.datetime(2026, 12, 1, 9, 30, tzinfo=tokyo)) == "2026-12-01T00:30:00Z"


def test_url_round_trip_without_padding():
    for url in ("https://a/", "https://ab/", "https://abc/?x=1"):
        token = eks_token.token_from_url(url)
        assert not token.endswith("=")
        assert eks_token.url_from_token(token) == url
    with pytest.raises(ValueError):
        eks_token.url_from_token("Bearer abc")


def test_exec_credential_shape():
    credential = eks_token.exec_credential("k8s-aws-v1.abc", "2026-11-30T12:14:00Z")
    assert credential == {
        "kind": "ExecCredential",
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "spec": {},
        "status": {"expirationTimestamp": "2026-11-30T12:14:00Z", "token": "k8s-aws-v1.abc"},
    }


def test_main_prints_an_exec_credential(capsys, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    assert eks_token.main(["--cluster-name", "trn-rehearsal", "--region", "us-west-2", "--endpoint-url", "http://127.0.0.1:5000"]) == 0
    credential = json.loads(capsys.readouterr().out)
    assert credential["kind"] == "ExecCredential"
    token = credential["status"]["token"]
    assert authenticator.review(token, SECRET, {"127.0.0.1:5000"}, ["trn-rehearsal"])[2] == "trn-rehearsal"


def test_main_without_credentials_fails_with_a_message(capsys, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert eks_token.main(["--cluster-name", "c", "--region", "us-west-2"]) == 1
    assert "cannot make a token for cluster c" in capsys.readouterr().err


def test_the_file_runs_as_a_command_outside_ansible(tmp_path, monkeypatch):
    """The role copies the file next to the kubeconfig; it must run alone with a plain python."""
    copy = tmp_path / "trainium_eks_token.py"
    copy.write_text(HELPER.read_text())
    env = {"PATH": "/usr/bin:/bin", "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
           "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}
    done = subprocess.run([sys.executable, str(copy), "--cluster-name", "x", "--region", "eu-west-1"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    credential = json.loads(done.stdout)
    _url, query = query_of(credential["status"]["token"])
    assert query["X-Amz-Credential"].endswith("/eu-west-1/sts/aws4_request")


def cli_args(*extra):
    return eks_token.parse_args(["--cluster-name", "trn", "--region", "us-west-2", *extra])


def test_cli_command_passes_profile_and_sts_endpoint():
    argv, env = eks_token.cli_command(cli_args("--profile", "prod", "--endpoint-url", "http://127.0.0.1:5000"), "/usr/bin/aws")
    assert argv == ["/usr/bin/aws", "eks", "get-token", "--cluster-name", "trn", "--region", "us-west-2", "--output", "json",
                    "--profile", "prod"]
    assert env["AWS_ENDPOINT_URL_STS"] == "http://127.0.0.1:5000"
    assert "AWS_ENDPOINT_URL_STS" not in eks_token.cli_command(cli_args(), "aws")[1]


@pytest.mark.parametrize("returncode, stdout, stderr, message", [
    (255, "", "Unable to locate credentials", "aws eks get-token failed (255): Unable to locate credentials"),
    (0, "not json", "", "aws eks get-token printed no ExecCredential"),
    (0, json.dumps({"status": {"token": "Bearer x", "expirationTimestamp": "t"}}), "", "printed a token that is not a k8s-aws-v1. token"),
])
def test_cli_failures_name_the_command(returncode, stdout, stderr, message):
    def run(argv, **_kwargs):
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)

    with pytest.raises(eks_token.TokenError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        eks_token.token_from_cli(cli_args(), which=lambda _name: "aws", run=run)


def test_cli_token_is_passed_through():
    answer = {"status": {"token": "k8s-aws-v1.abc", "expirationTimestamp": "2026-12-01T00:14:00Z"}}

    def run(argv, **_kwargs):
        return subprocess.CompletedProcess(argv, 0, json.dumps(answer), "")

    assert eks_token.token_from_cli(cli_args(), which=lambda _name: "/opt/aws", run=run) == {
        "token": "k8s-aws-v1.abc", "expiration": "2026-12-01T00:14:00Z"}


def test_main_without_botocore_and_without_aws_cli_says_what_to_install(capsys, monkeypatch):
    monkeypatch.setattr(eks_token, "HAS_BOTOCORE", False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert eks_token.main(["--cluster-name", "c", "--region", "us-west-2"]) == 1
    assert "cannot import botocore and there is no AWS CLI (aws) on PATH" in capsys.readouterr().err
