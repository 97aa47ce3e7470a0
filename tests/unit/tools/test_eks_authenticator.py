# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's EKS token authenticator, on tokens made the way EKS clients make them."""

from __future__ import annotations

import base64
import datetime
import importlib.util
import pathlib
import urllib.parse

import boto3
import pytest

_PATH = pathlib.Path(__file__).resolve().parents[3] / "tools" / "rehearsal" / "eks_authenticator.py"
_SPEC = importlib.util.spec_from_file_location("eks_authenticator", _PATH)
authenticator = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(authenticator)

ENDPOINT = "http://127.0.0.1:5000"
HOSTS = {"127.0.0.1:5000"}
SECRET = "rehearsal"


def make_token(cluster, secret=SECRET, endpoint=ENDPOINT, expires=60):
    """A k8s-aws-v1. token: a presigned STS GetCallerIdentity URL with x-k8s-aws-id signed in."""
    sts = boto3.client(
        "sts", region_name="us-west-2", endpoint_url=endpoint,
        aws_access_key_id="AKIDREHEARSAL", aws_secret_access_key=secret,
    )

    def add_cluster_header(request, **_kwargs):
        request.headers["x-k8s-aws-id"] = cluster

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_cluster_header)
    url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=expires, HttpMethod="GET")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def _url(token):
    return authenticator.decode_token(token)


def _retoken(url):
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def test_valid_token_maps_to_admin():
    user, access_key, cluster = authenticator.review(make_token("trn-rehearsal"), SECRET, HOSTS, ["other", "trn-rehearsal"])
    assert (user, access_key, cluster) == ("rehearsal-admin", "AKIDREHEARSAL", "trn-rehearsal")


@pytest.mark.parametrize("clusters", [[], ["trn-other"]])
def test_token_for_a_cluster_that_does_not_exist_is_refused(clusters):
    with pytest.raises(authenticator.TokenError, match="does not match any cluster"):
        authenticator.review(make_token("trn-rehearsal"), SECRET, HOSTS, clusters)


def test_token_signed_with_another_key_is_refused():
    with pytest.raises(authenticator.TokenError, match="does not match"):
        authenticator.review(make_token("trn-rehearsal", secret="not-the-key"), SECRET, HOSTS, ["trn-rehearsal"])


def test_expired_token_is_refused():
    token = make_token("trn-rehearsal")
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=16)
    with pytest.raises(authenticator.TokenError, match="expired"):
        authenticator.review(token, SECRET, HOSTS, ["trn-rehearsal"], now=later)


def test_token_stays_good_for_fifteen_minutes_like_on_eks():
    # Presigned for 60 s, as `aws eks get-token` does, and still accepted 14 minutes later.
    token = make_token("trn-rehearsal", expires=60)
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=14)
    assert authenticator.review(token, SECRET, HOSTS, ["trn-rehearsal"], now=later)[0]


def test_unknown_sts_host_is_refused():
    token = make_token("trn-rehearsal", endpoint="http://127.0.0.2:5000")
    with pytest.raises(authenticator.TokenError, match="not an STS endpoint"):
        authenticator.review(token, SECRET, HOSTS, ["trn-rehearsal"])


@pytest.mark.parametrize("old,new,reason", [
    ("Action=GetCallerIdentity", "Action=AssumeRole", "GetCallerIdentity"),
    ("X-Amz-Expires=60", "X-Amz-Expires=3600", "outside 1..900"),
    ("x-k8s-aws-id", "x-other", "signed headers"),
])
def test_tampered_url_is_refused(old, new, reason):
    url = _url(make_token("trn-rehearsal"))
    assert old in url
    with pytest.raises(authenticator.TokenError, match=reason):
        authenticator.review(_retoken(url.replace(old, new)), SECRET, HOSTS, ["trn-rehearsal"])


def test_changed_query_breaks_the_signature():
    url = urllib.parse.urlsplit(_url(make_token("trn-rehearsal")))
    query = urllib.parse.parse_qsl(url.query) + [("Extra", "1")]
    changed = url._replace(query=urllib.parse.urlencode(query)).geturl()
    with pytest.raises(authenticator.TokenError, match="does not match"):
        authenticator.review(_retoken(changed), SECRET, HOSTS, ["trn-rehearsal"])


@pytest.mark.parametrize("token,reason", [
    ("Bearer abc", "not a k8s-aws-v1. token"),
    ("k8s-aws-v1.!!!", "base64url"),
])
def test_garbage_is_refused(token, reason):
    with pytest.raises(authenticator.TokenError, match=reason):
        authenticator.review(token, SECRET, HOSTS, ["trn-rehearsal"])
