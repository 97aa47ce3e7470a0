# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's ECR stand-in: a real registry with TLS and basic auth, and buildah.

buildah builds a tiny image FROM scratch and pushes it with the credentials from
.rehearsal/env.sh; the same push without them, or with a wrong password, or
without the rehearsal CA, must fail. buildah never sees the user's own login
(~/.docker/config.json, containers auth.json): it gets an empty auth file and a
HOME of its own, and its storage is the rehearsal's ($TRAINIUM_BUILDAH_OPTS).
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shlex
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest

# One image build and one buildah storage: one test after another, on one worker.
pytestmark = pytest.mark.xdist_group("registry")

REPOSITORY = "trainium/smoke"
MANIFEST_TYPES = ", ".join((
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
))


class Registry:
    """GET requests to the rehearsal registry, verified against the rehearsal CA."""

    def __init__(self, env):
        self.env = env
        self.host = env["TRAINIUM_REGISTRY"]
        self.url = env["TRAINIUM_REGISTRY_URL"]
        self.user = env["TRAINIUM_REGISTRY_USERNAME"]
        self.password = env["TRAINIUM_REGISTRY_PASSWORD"]
        self.context = ssl.create_default_context(cafile=env["TRAINIUM_REGISTRY_CA_FILE"])

    def get(self, path, user=None, password=None, method="GET", headers=None):
        """(status, headers, body) of one request; 4xx answers are returned, not raised."""
        request = urllib.request.Request(self.url + path, method=method, headers=dict(headers or {}))
        if user is not None:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=10, context=self.context) as answer:
                return answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    def get_authorized(self, path, **kwargs):
        return self.get(path, user=self.user, password=self.password, **kwargs)

    def tags(self):
        status, _headers, body = self.get_authorized(f"/v2/{REPOSITORY}/tags/list")
        if status == 404:
            return []
        assert status == 200, body
        return json.loads(body).get("tags") or []


@pytest.fixture(scope="module")
def registry(shared_rehearsal):
    return Registry(shared_rehearsal)


class Buildah:
    """buildah with the rehearsal's global flags, isolated from the user's logins."""

    def __init__(self, env, home):
        self.env = env
        self.global_opts = shlex.split(env["TRAINIUM_BUILDAH_OPTS"])
        home.mkdir(parents=True, exist_ok=True)
        # An auth file with no logins: neither --creds-less pushes nor pulls can
        # borrow credentials from the user's auth.json or ~/.docker/config.json.
        self.authfile = home / "auth.json"
        self.authfile.write_text(json.dumps({"auths": {}}))
        self.process_env = {
            key: value for key, value in os.environ.items()
            if key not in ("REGISTRY_AUTH_FILE", "DOCKER_CONFIG", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "CONTAINERS_STORAGE_CONF")
        }
        self.process_env.update(
            HOME=str(home),
            REGISTRY_AUTH_FILE=str(self.authfile),
            BUILDAH_ISOLATION=env.get("TRAINIUM_BUILDAH_ISOLATION", "chroot"),
        )

    def run(self, *args, timeout=60):
        return subprocess.run(
            ["buildah", *self.global_opts, *args],
            env=self.process_env, capture_output=True, text=True, timeout=timeout, check=False,
        )

    def push(self, image, destination, *options):
        return self.run("push", "--authfile", str(self.authfile), *options, image, f"docker://{destination}")


@pytest.fixture(scope="module")
def buildah(shared_rehearsal, tmp_path_factory):
    return Buildah(shared_rehearsal, tmp_path_factory.mktemp("buildah-home"))


@pytest.fixture(scope="module")
def smoke_image(buildah, tmp_path_factory):
    """A tiny image FROM scratch in the rehearsal's buildah storage, removed afterwards."""
    context = tmp_path_factory.mktemp("smoke-image")
    (context / "hello.txt").write_text("trainium.eks rehearsal registry smoke test\n")
    (context / "Containerfile").write_text("FROM scratch\nCOPY hello.txt /hello.txt\n")
    image = f"localhost/trainium-rehearsal-smoke:{uuid.uuid4().hex[:12]}"
    built = buildah.run(
        "bud", "--isolation", buildah.process_env["BUILDAH_ISOLATION"], "--authfile", str(buildah.authfile),
        "-f", str(context / "Containerfile"), "-t", image, str(context),
    )
    assert built.returncode == 0, built.stdout + built.stderr
    yield image
    buildah.run("rmi", "-f", image)


def unique_tag():
    return f"t-{uuid.uuid4().hex[:12]}"


def test_password_is_kept_private_and_matches_env(rehearsal, registry):
    password_file = pathlib.Path(rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "registry" / "password"
    assert password_file.stat().st_mode & 0o777 == 0o600
    assert password_file.read_text().strip() == registry.password
    assert registry.user == "trainium"
    assert registry.host == f"127.0.0.1:{os.environ.get('TRAINIUM_REGISTRY_PORT', '5050')}"


def test_v2_refuses_anonymous_and_wrong_password(registry):
    status, headers, _body = registry.get("/v2/")
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Basic realm=")
    status, _headers, _body = registry.get("/v2/", user=registry.user, password=registry.password + "x")
    assert status == 401


def test_v2_accepts_the_rehearsal_credentials(registry):
    status, _headers, body = registry.get_authorized("/v2/")
    assert status == 200, body


def test_push_with_credentials_succeeds(registry, buildah, smoke_image, tmp_path):
    tag = unique_tag()
    digestfile = tmp_path / "digest"
    pushed = buildah.push(
        smoke_image, f"{registry.host}/{REPOSITORY}:{tag}",
        "--cert-dir", registry.env["TRAINIUM_REGISTRY_CERT_DIR"],
        "--creds", f"{registry.user}:{registry.password}",
        "--digestfile", str(digestfile),
    )
    assert pushed.returncode == 0, pushed.stderr
    digest = digestfile.read_text().strip()
    assert digest.startswith("sha256:")

    assert tag in registry.tags()
    status, headers, body = registry.get_authorized(f"/v2/{REPOSITORY}/manifests/{tag}", headers={"Accept": MANIFEST_TYPES})
    assert status == 200, body
    assert headers["Docker-Content-Digest"] == digest
    manifest = json.loads(body)
    assert len(manifest["layers"]) == 1

    # The manifest is only readable with credentials, as on ECR.
    status, _headers, _body = registry.get(f"/v2/{REPOSITORY}/manifests/{tag}", headers={"Accept": MANIFEST_TYPES})
    assert status == 401

    # Deleting works (ECR's BatchDeleteImage has a stand-in) and keeps the registry small between runs.
    status, _headers, body = registry.get_authorized(f"/v2/{REPOSITORY}/manifests/{digest}", method="DELETE")
    assert status == 202, body
    assert tag not in registry.tags()


@pytest.mark.parametrize("creds", [None, "wrong-password"], ids=["no-credentials", "wrong-password"])
def test_push_without_valid_credentials_fails(registry, buildah, smoke_image, creds):
    tag = unique_tag()
    options = ["--cert-dir", registry.env["TRAINIUM_REGISTRY_CERT_DIR"]]
    if creds is not None:
        options += ["--creds", f"{registry.user}:{creds}"]
    pushed = buildah.push(smoke_image, f"{registry.host}/{REPOSITORY}:{tag}", *options)
    assert pushed.returncode != 0
    assert "unauthorized" in pushed.stderr or "authentication required" in pushed.stderr, pushed.stderr
    assert tag not in registry.tags()


def test_push_without_the_rehearsal_ca_fails_tls_verification(registry, buildah, smoke_image, tmp_path):
    tag = unique_tag()
    empty_cert_dir = tmp_path / "certs.d"
    empty_cert_dir.mkdir()
    pushed = buildah.push(
        smoke_image, f"{registry.host}/{REPOSITORY}:{tag}",
        "--cert-dir", str(empty_cert_dir), "--creds", f"{registry.user}:{registry.password}",
    )
    assert pushed.returncode != 0
    assert "x509" in pushed.stderr or "certificate" in pushed.stderr, pushed.stderr
    assert tag not in registry.tags()
