# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""trainium_image: the content-addressed tag, builder detection, the ECR login file, the registry check."""

from __future__ import annotations

import base64
import email.message
import io
import json
import os
import stat
import urllib.error

import pytest

from ansible_collections.trainium.eks.plugins.module_utils import trainium_image as ti


@pytest.fixture
def context(tmp_path):
    root = tmp_path / "ctx"
    (root / "workload").mkdir(parents=True)
    (root / "Containerfile").write_text("FROM example.com/base:1\nCOPY workload/ /opt/trainium-eks/\n")
    (root / "workload" / "train_bert.py").write_text("print('train')\n")
    (root / "workload" / "requirements.txt").write_text("h5py==3.12.1 --hash=sha256:00\n")
    for path in root.rglob("*"):
        if path.is_file():
            path.chmod(0o644)
    return root


def test_the_tag_is_the_prefix_and_12_hex_and_stable(context, tmp_path):
    tag = ti.content_tag("0.1.0", str(context))
    assert tag.startswith("0.1.0-") and len(tag) == len("0.1.0-") + 12
    int(tag.rsplit("-", 1)[1], 16)
    assert ti.content_tag("0.1.0", str(context)) == tag
    # The same files elsewhere (another checkout, another cluster's cache dir) hash the same.
    copy = tmp_path / "elsewhere"
    for path in sorted(context.rglob("*")):
        target = copy / path.relative_to(context)
        if path.is_dir():
            target.mkdir(parents=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
            target.chmod(0o644)
    assert ti.content_tag("0.1.0", str(copy)) == tag
    assert ti.content_tag("", str(context)) == tag.rsplit("-", 1)[1]


@pytest.mark.parametrize("change", ["content", "mode", "new file", "rename", "build arg"])
def test_the_tag_changes_with_content_mode_files_and_build_args(context, change):
    before = ti.content_tag("0.1.0", str(context), {"A": "1"})
    args = {"A": "1"}
    script = context / "workload" / "train_bert.py"
    if change == "content":
        script.write_text("print('train!')\n")
    elif change == "mode":
        script.chmod(0o755)
    elif change == "new file":
        (context / "workload" / "extra.py").write_text("")
    elif change == "rename":
        script.rename(context / "workload" / "train.py")
    else:
        args = {"A": "2"}
    assert ti.content_tag("0.1.0", str(context), args) != before


def test_a_containerfile_outside_the_context_counts(context, tmp_path):
    outside = tmp_path / "Containerfile.outside"
    outside.write_text("FROM a/b:1\n")
    first = ti.content_tag("t", str(context), extra_files=(("containerfile", str(outside)),))
    outside.write_text("FROM a/b:2\n")
    assert ti.content_tag("t", str(context), extra_files=(("containerfile", str(outside)),)) != first


def test_builder_detection_order_and_error():
    present = {"podman": "/usr/bin/podman", "docker": "/usr/bin/docker"}
    assert ti.detect_builder("auto", which=present.get) == ("podman", "/usr/bin/podman")
    assert ti.detect_builder("auto", which={"buildah": "/b", **present}.get) == ("buildah", "/b")
    assert ti.detect_builder("docker", which=present.get) == ("docker", "/usr/bin/docker")
    with pytest.raises(ti.ImageError, match="buildah is not on PATH"):
        ti.detect_builder("buildah", which=present.get)
    with pytest.raises(ti.ImageError) as error:
        ti.detect_builder("auto", which={}.get)
    for words in ("buildah (Debian package buildah)", "podman (Debian package podman)", "docker (Debian package docker.io)"):
        assert words in str(error.value)


def test_token_decoding():
    token = base64.b64encode(b"AWS:s3cr:et").decode()
    assert ti.decode_token(token) == ("AWS", "s3cr:et")
    for bad in ("not base64!", base64.b64encode(b"no-colon").decode(), base64.b64encode(b":empty-user").decode()):
        with pytest.raises(ti.ImageError):
            ti.decode_token(bad)


def test_auth_file_is_private_and_removed(tmp_path):
    with ti.auth_file("127.0.0.1:5050", "AWS", "pw", directory=str(tmp_path)) as path:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        auths = json.loads(open(path, encoding="utf-8").read())["auths"]
        assert base64.b64decode(auths["127.0.0.1:5050"]["auth"]) == b"AWS:pw"
        # docker --config reads config.json from the same directory
        assert os.path.isfile(os.path.join(os.path.dirname(path), "config.json"))
    assert list(tmp_path.iterdir()) == []


def test_auth_file_is_removed_after_an_error(tmp_path):
    with pytest.raises(RuntimeError):
        with ti.auth_file("r", "AWS", "pw", directory=str(tmp_path)):
            raise RuntimeError("build failed")
    assert list(tmp_path.iterdir()) == []


def test_commands_carry_no_secret_and_the_auth_file():
    build = ti.build_command("buildah", "/usr/bin/buildah", ["--root", "/r"], "/c/Containerfile", "/c", "reg/repo:t",
                             build_args={"B": "2", "A": "1"}, isolation="chroot", cert_dir="/certs", authfile="/tmp/x/auth.json")
    assert build == ["/usr/bin/buildah", "--root", "/r", "build", "--isolation", "chroot", "--authfile", "/tmp/x/auth.json",
                     "--cert-dir", "/certs", "--build-arg", "A=1", "--build-arg", "B=2", "-f", "/c/Containerfile", "-t", "reg/repo:t", "/c"]
    push = ti.push_command("podman", "/usr/bin/podman", [], "reg/repo:t", authfile="/tmp/x/auth.json", cert_dir="/certs")
    assert push == ["/usr/bin/podman", "push", "--authfile", "/tmp/x/auth.json", "--cert-dir", "/certs", "reg/repo:t", "docker://reg/repo:t"]
    docker = ti.push_command("docker", "/usr/bin/docker", [], "reg/repo:t", authfile="/tmp/x/auth.json")
    assert docker == ["/usr/bin/docker", "--config", "/tmp/x", "push", "reg/repo:t"]
    assert not any("--creds" in word or "pw" == word for word in build + push + docker)


class FakeAnswer:
    def __init__(self, status, headers):
        self.status = status
        self.headers = headers

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def fake_urlopen(status, digest=None, seen=None):
    """A stand-in for ansible's open_url: records the call, answers status (HTTPError from 400 on, as open_url)."""
    def urlopen(url, method=None, headers=None, timeout=None, ca_path=None, use_netrc=True):
        if seen is not None:
            seen.append({"url": url, "method": method, "headers": headers, "ca_path": ca_path, "use_netrc": use_netrc})
        answer_headers = email.message.Message()
        if digest:
            answer_headers["Docker-Content-Digest"] = digest
        if status >= 400:
            raise urllib.error.HTTPError(url, status, "no", answer_headers, io.BytesIO(b""))
        return FakeAnswer(status, answer_headers)

    return urlopen


def test_manifest_check_found_sends_accept_and_basic_auth():
    seen = []
    registry = ti.Registry("127.0.0.1:5050", "AWS", "pw", ca_path="/ca.pem", opener=fake_urlopen(200, "sha256:abc", seen))
    assert registry.manifest_digest("bert", "0.1.0-abc") == "sha256:abc"
    request = seen[0]
    assert request["method"] == "HEAD"
    assert request["url"] == "https://127.0.0.1:5050/v2/bert/manifests/0.1.0-abc"
    assert "application/vnd.oci.image.manifest.v1+json" in request["headers"]["Accept"]
    assert "application/vnd.docker.distribution.manifest.v2+json" in request["headers"]["Accept"]
    assert request["headers"]["Authorization"] == "Basic " + base64.b64encode(b"AWS:pw").decode()
    assert request["ca_path"] == "/ca.pem" and request["use_netrc"] is False


def test_manifest_check_missing_and_refused():
    assert ti.Registry("r:1", "AWS", "pw", opener=fake_urlopen(404)).manifest_digest("bert", "t") is None
    with pytest.raises(ti.ImageError, match="refused the ECR token .*HTTP 401"):
        ti.Registry("r:1", "AWS", "pw", opener=fake_urlopen(401)).manifest_digest("bert", "t")
    with pytest.raises(ti.ImageError, match="HTTP 500"):
        ti.Registry("r:1", "AWS", "pw", opener=fake_urlopen(500)).manifest_digest("bert", "t")


def test_manifest_check_unreachable():
    def urlopen(url, **kwargs):
        raise urllib.error.URLError("connection refused")

    with pytest.raises(ti.ImageError, match="did not answer HEAD .*connection refused"):
        ti.Registry("r:1", "AWS", "pw", opener=urlopen).manifest_digest("bert", "t")


def test_repository_uri_and_base_images():
    assert ti.split_repository_uri("123456789012.dkr.ecr.us-west-2.amazonaws.com/team/bert") == (
        "123456789012.dkr.ecr.us-west-2.amazonaws.com", "team/bert")
    assert ti.split_repository_uri("127.0.0.1:5050/bert") == ("127.0.0.1:5050", "bert")
    with pytest.raises(ti.ImageError):
        ti.split_repository_uri("bert")
    text = "FROM --platform=linux/amd64 a/b:1 AS build\nRUN x\nFROM build\nFROM scratch\nfrom c/d@sha256:00\n"
    assert ti.base_images(text) == ["a/b:1", "c/d@sha256:00"]
    assert ti.looks_like_pull_failure("Error: creating build container: initializing source docker://x: manifest unknown")
    assert not ti.looks_like_pull_failure("error building at STEP \"RUN false\": exit status 1")


def test_ca_bundle_joins_the_certificates_and_refuses_an_empty_dir(tmp_path):
    cas = tmp_path / "certs.d"
    cas.mkdir()
    with pytest.raises(ti.ImageError, match="registry_ca_dir"):
        ti.ca_bundle(str(cas), str(tmp_path))
    (cas / "a.crt").write_text("-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----")
    (cas / "b.crt").write_text("-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n")
    (cas / "client.key").write_text("not a CA")
    bundle = ti.ca_bundle(str(cas), str(tmp_path))
    assert open(bundle, encoding="utf-8").read().count("BEGIN CERTIFICATE") == 2
    assert "not a CA" not in open(bundle, encoding="utf-8").read()
    assert ti.ca_bundle("", str(tmp_path)) is None
