# -*- coding: utf-8 -*-
"""trainium_image_digest: references, mirrors, the two registry logins and the record.

The registry is a stub of ``open_url`` here (what it is asked is recorded and
checked); the real thing (TLS, basic auth, the rehearsal's ECR stand-in) is
asked by the platform roles' Molecule scenarios and the end-to-end test."""

from __future__ import annotations

import hashlib
import io
import json
import urllib.error
import urllib.parse

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_image_digest as tid

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32
BEARER_PUBLIC_ECR = 'Bearer realm="https://public.ecr.aws/token/",service="public.ecr.aws",scope="aws"'
BASIC_ECR = 'Basic realm="https://602401143452.dkr.ecr.us-west-2.amazonaws.com/",service="ecr.amazonaws.com"'


@pytest.mark.parametrize("reference, expected", [
    ("public.ecr.aws/neuron/neuron-device-plugin:2.31.0.0", ("public.ecr.aws", "neuron/neuron-device-plugin", "2.31.0.0", None)),
    ("127.0.0.1:5050/mirror/quay.io/coreos/etcd:v3.5.34", ("127.0.0.1:5050", "mirror/quay.io/coreos/etcd", "v3.5.34", None)),
    ("localhost/app:1", ("localhost", "app", "1", None)),
    ("busybox:1.36", ("docker.io", "library/busybox", "1.36", None)),
    ("bitnami/etcd:3.5", ("docker.io", "bitnami/etcd", "3.5", None)),
    (f"quay.io/coreos/etcd:v3.5.34@{DIGEST}", ("quay.io", "coreos/etcd", "v3.5.34", DIGEST)),
    (f"quay.io/coreos/etcd@{DIGEST}", ("quay.io", "coreos/etcd", None, DIGEST)),
])
def test_references_are_split_into_registry_repository_tag_and_digest(reference, expected):
    assert tid.parse_reference(reference) == expected


@pytest.mark.parametrize("reference, says", [
    ("quay.io/coreos/etcd", "names neither a tag nor a digest"),
    ("Quay.io/Coreos/etcd:v1", "is not an image reference"),
    ("quay.io/coreos/etcd@sha256:abc", "is not an image reference"),
    ("", "is not an image reference"),
])
def test_bad_references_are_refused_with_the_reference(reference, says):
    with pytest.raises(tid.DigestError, match=says):
        tid.parse_reference(reference)


class Answer:
    def __init__(self, status, headers=None, body=b""):
        self.status, self.headers, self._body = status, headers or {}, body

    def read(self):
        return self._body


class StubRegistry:
    """open_url's signature; answers from a list of (method, url prefix) -> (status, headers, body); records each call."""

    def __init__(self, answers):
        self.answers, self.calls = list(answers), []

    def __call__(self, url, method=None, headers=None, **kwargs):
        self.calls.append((method, url, dict(headers or {}), kwargs))
        (want_method, want_url), (status, answer_headers, body) = self.answers.pop(0)
        assert (method, url.split("?")[0]) == (want_method, want_url), (method, url)
        if status >= 400:
            raise urllib.error.HTTPError(url, status, "refused", answer_headers, io.BytesIO(body))
        return Answer(status, answer_headers, body)


def test_a_bearer_challenge_gets_an_anonymous_token_for_the_repository_then_the_digest():
    manifest = "https://public.ecr.aws/v2/neuron/neuron-monitor/manifests/1.3.0"
    stub = StubRegistry([
        (("HEAD", manifest), (401, {"WWW-Authenticate": BEARER_PUBLIC_ECR}, b"")),
        (("GET", "https://public.ecr.aws/token/"), (200, {}, json.dumps({"token": "anon-token"}).encode())),
        (("HEAD", manifest), (200, {"Docker-Content-Digest": DIGEST}, b"")),
    ])
    resolver = tid.Resolver(opener=stub)
    assert resolver.digest("public.ecr.aws/neuron/neuron-monitor:1.3.0") == DIGEST
    token_url = urllib.parse.urlparse(stub.calls[1][1])
    assert urllib.parse.parse_qs(token_url.query) == {"scope": ["repository:neuron/neuron-monitor:pull"], "service": ["public.ecr.aws"]}
    assert "Authorization" not in stub.calls[1][2], "no login was given: the token request is anonymous"
    assert stub.calls[2][2]["Authorization"] == "Bearer anon-token"
    assert "manifest.list.v2+json" in stub.calls[0][2]["Accept"] and "image.index.v1+json" in stub.calls[0][2]["Accept"]
    assert all(call[3]["use_netrc"] is False for call in stub.calls)


def test_a_bearer_challenge_never_gets_the_basic_login_and_a_foreign_realm_is_not_asked():
    asked = []
    manifest = "https://quay.io/v2/coreos/etcd/manifests/v3.5.34"
    stub = StubRegistry([
        (("HEAD", manifest), (401, {"WWW-Authenticate": 'Bearer realm="https://quay.io/v2/auth",service="quay.io"'}, b"")),
        (("GET", "https://quay.io/v2/auth"), (200, {}, json.dumps({"token": "t"}).encode())),
        (("HEAD", manifest), (200, {"Docker-Content-Digest": DIGEST}, b"")),
    ])
    resolver = tid.Resolver(opener=stub, basic_login=lambda host: asked.append(host) or ("AWS", "ecr-password"))
    assert resolver.digest("quay.io/coreos/etcd:v3.5.34") == DIGEST
    assert asked == [] and stub.calls[1][2] == {}, "the ECR login stays home when the registry asks for a bearer token"
    foreign = StubRegistry([(("HEAD", manifest), (401, {"WWW-Authenticate": 'Bearer realm="https://collector.example.net/token"'}, b""))])
    with pytest.raises(tid.DigestError, match="asks for a login"):
        tid.Resolver(opener=foreign).digest("quay.io/coreos/etcd:v3.5.34")
    assert len(foreign.calls) == 1, "no request went to the foreign realm"
    assert all(call[3]["unredirected_headers"] == ["Authorization"] for call in stub.calls)


@pytest.mark.parametrize("realm, registry, same", [
    ("auth.docker.io", "registry-1.docker.io", True), ("quay.io", "quay.io", True), ("public.ecr.aws", "public.ecr.aws", True),
    ("registry.example.com", "registry.example.com:5443", True), ("evil.example.net", "quay.io", False), (None, "quay.io", False),
])
def test_a_token_realm_must_belong_to_the_registry(realm, registry, same):
    assert tid.same_domain(realm, registry) is same


def test_the_ecr_login_is_only_for_ecr_and_the_named_mirrors():
    from ansible_collections.trainium.eks.plugins.modules import image_digest  # pylint: disable=import-outside-toplevel

    class Module:
        no_log_values = set()

        @staticmethod
        def client(service):
            assert service == "ecr"
            return type("Ecr", (), {"get_authorization_token": staticmethod(
                lambda: {"authorizationData": [{"authorizationToken": "QVdTOnNlY3JldA=="}]})})()

    login = image_digest.ecr_login(Module(), {"127.0.0.1:5050"})
    assert login("quay.io") is None and login("public.ecr.aws") is None and login("evil.dkr.ecr.example.com") is None
    assert login("602401143452.dkr.ecr.us-west-2.amazonaws.com") == ("AWS", "secret")
    assert login("918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn") == ("AWS", "secret")
    assert login("127.0.0.1:5050") == ("AWS", "secret")
    assert "secret" in Module.no_log_values


def test_a_basic_challenge_is_answered_with_the_login_of_the_registry_and_only_then_asked():
    asked = []
    manifest = "https://602401143452.dkr.ecr.us-west-2.amazonaws.com/v2/eks/aws-efa-k8s-device-plugin/manifests/v0.5.20"
    stub = StubRegistry([
        (("HEAD", manifest), (401, {"WWW-Authenticate": BASIC_ECR}, b"")),
        (("HEAD", manifest), (200, {"Docker-Content-Digest": DIGEST}, b"")),
    ])
    resolver = tid.Resolver(opener=stub, basic_login=lambda host: asked.append(host) or ("AWS", "ecr-password"))
    assert resolver.digest("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20") == DIGEST
    assert asked == ["602401143452.dkr.ecr.us-west-2.amazonaws.com"]
    assert stub.calls[1][2]["Authorization"] == "Basic QVdTOmVjci1wYXNzd29yZA=="  # AWS:ecr-password


def test_a_mirror_is_asked_instead_and_the_reference_keeps_its_registry():
    stub = StubRegistry([(("HEAD", "https://127.0.0.1:5050/v2/mirror/quay.io/coreos/etcd/manifests/v3.5.34"),
                          (200, {"Docker-Content-Digest": DIGEST}, b""))])
    resolver = tid.Resolver(mirrors={"*": "127.0.0.1:5050/mirror"}, opener=stub, ca_path="/ca.pem")
    images, record, asked = tid.pin_all(["quay.io/coreos/etcd:v3.5.34"], {}, resolver)
    assert images == {"quay.io/coreos/etcd:v3.5.34": f"quay.io/coreos/etcd:v3.5.34@{DIGEST}"}
    assert record == {"quay.io/coreos/etcd:v3.5.34": DIGEST} and asked == ["quay.io/coreos/etcd:v3.5.34"]
    assert stub.calls[0][3]["ca_path"] == "/ca.pem"


def test_a_mirror_named_for_the_registry_wins_over_the_catch_all():
    stub = StubRegistry([(("HEAD", "https://cache.example.com/v2/ecr-public/neuron/neuron-monitor/manifests/1.3.0"),
                          (200, {"Docker-Content-Digest": DIGEST}, b""))])
    resolver = tid.Resolver(mirrors={"public.ecr.aws": "cache.example.com/ecr-public", "*": "other.example.com"}, opener=stub)
    assert resolver.digest("public.ecr.aws/neuron/neuron-monitor:1.3.0") == DIGEST


def test_without_the_digest_header_the_digest_is_the_sha256_of_the_manifest():
    body = b'{"schemaVersion": 2}'
    url = "https://quay.io/v2/coreos/etcd/manifests/v3.5.34"
    stub = StubRegistry([(("HEAD", url), (200, {}, b"")), (("GET", url), (200, {}, body))])
    assert tid.Resolver(opener=stub).digest("quay.io/coreos/etcd:v3.5.34") == "sha256:" + hashlib.sha256(body).hexdigest()


@pytest.mark.parametrize("answers, says", [
    ([(404, {}, b"")], "127.0.0.1:5050 has no mirror/quay.io/coreos/etcd:v3.5.34 (the mirror of quay.io)"),
    ([(401, {"WWW-Authenticate": 'Basic realm="x"'}, b"")], "asks for a login to read mirror/quay.io/coreos/etcd:v3.5.34 and none could be had"),
    ([(500, {}, b"")], "answered HTTP 500 to HEAD /v2/mirror/quay.io/coreos/etcd/manifests/v3.5.34"),
    ([(200, {"Docker-Content-Digest": "sha512:00"}, b"")], "gave 'sha512:00' as the digest"),
])
def test_what_cannot_be_pinned_says_why(answers, says):
    url = "https://127.0.0.1:5050/v2/mirror/quay.io/coreos/etcd/manifests/v3.5.34"
    stub = StubRegistry([(("HEAD", url), answer) for answer in answers])
    with pytest.raises(tid.DigestError) as raised:
        tid.Resolver(mirrors={"*": "127.0.0.1:5050/mirror"}, opener=stub).digest("quay.io/coreos/etcd:v3.5.34")
    assert says in str(raised.value)


def test_an_unreachable_registry_is_named():
    def refuse(url, **kwargs):
        raise urllib.error.URLError("connection refused")

    with pytest.raises(tid.DigestError, match=r"https://quay.io did not answer HEAD .*connection refused"):
        tid.Resolver(opener=refuse).digest("quay.io/coreos/etcd:v3.5.34")


def test_the_record_is_used_before_the_registry_and_a_given_digest_is_kept():
    stub = StubRegistry([(("HEAD", "https://public.ecr.aws/v2/neuron/neuron-monitor/manifests/1.3.0"),
                          (200, {"Docker-Content-Digest": OTHER}, b""))])
    recorded = {"quay.io/coreos/etcd:v3.5.34": DIGEST, "quay.io/old/image:1": DIGEST, "public.ecr.aws/x/y:1": "not-a-digest"}
    given = f"public.ecr.aws/neuron/neuron-device-plugin:2.31.0.0@{OTHER}"
    images, record, asked = tid.pin_all(["quay.io/coreos/etcd:v3.5.34", given, "public.ecr.aws/neuron/neuron-monitor:1.3.0"],
                                        recorded, tid.Resolver(opener=stub))
    assert images == {"quay.io/coreos/etcd:v3.5.34": f"quay.io/coreos/etcd:v3.5.34@{DIGEST}", given: given,
                      "public.ecr.aws/neuron/neuron-monitor:1.3.0": f"public.ecr.aws/neuron/neuron-monitor:1.3.0@{OTHER}"}
    assert asked == ["public.ecr.aws/neuron/neuron-monitor:1.3.0"], "the recorded etcd digest is not asked again"
    assert record["public.ecr.aws/neuron/neuron-monitor:1.3.0"] == OTHER and record["quay.io/old/image:1"] == DIGEST
    assert given not in record
    assert recorded["public.ecr.aws/x/y:1"] == "not-a-digest", "the caller's record is not changed in place"
