# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution environment's pins (docs/awx.md, section 1.1).

- meta/ee-requirements.txt, written by tools/ee-lock.py: current, one line per
  requirement with every hash requirements.txt has for it, closed under the
  run-time dependencies of what it pins; the lock tool refuses stale files
  and pins that differ from requirements.txt.
- execution-environment.yml excludes exactly the Python requirements of the
  collections it installs, and meta/ee-requirements.txt pins each of them at
  a version their specifier admits; the image build's own introspect step,
  run on those collections, yields only hashed lines.
- tools/ee-pin-base.py against a registry served by this process on
  127.0.0.1 (the OCI distribution API with its 401 + bearer token flow): the
  tag resolved to its digest, EE_BASE_IMAGE_DIGEST and a digest in the
  definition taken without a request, and no unpinned Containerfile left
  behind when no digest can be had.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import sysconfig
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from ansible_builder._target_scripts import introspect
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"
# Requirements of the collections that the EE leaves out on purpose (awx.awx's export/import modules and
# its schedule_rrule lookup, which trainium.eks does not use; requirements.txt has no hashes for them).
NOT_INSTALLED = {"awxkit": "awx.awx", "pytz": "awx.awx"}


def _tool(name):
    spec = importlib.util.spec_from_file_location(f"ee_tool_{name.replace('-', '_')}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


ee_lock = _tool("ee-lock")
ee_pin_base = _tool("ee-pin-base")


def _run(*args, env=None, cwd=ROOT):
    return subprocess.run([str(BIN / "python"), *map(str, args)], cwd=cwd, capture_output=True, text=True, check=False,
                          env={**{k: v for k, v in os.environ.items() if k != "EE_BASE_IMAGE_DIGEST"},
                               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", **(env or {})})


def _definition():
    return yaml.safe_load((ROOT / "execution-environment.yml").read_text())


# --- meta/ee-requirements.txt


def test_the_ee_lock_is_current():
    checked = _run("tools/ee-lock.py", "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_each_ee_requirement_is_one_line_with_every_hash_of_requirements_txt():
    lock = ee_lock.read_lock(ROOT / "requirements.txt")
    lines = [line for line in (ROOT / "meta/ee-requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert lines
    for line in lines:
        assert not line.endswith("\\"), f"continued line (ansible-builder would split it): {line[:60]}"
        requirement, _sep, options = line.partition(" --hash=")
        assert options, f"no hash: {line}"
        req = Requirement(requirement)
        pin = lock[canonicalize_name(req.name)]
        assert str(req.specifier) == f"=={pin.version}", f"{requirement}; requirements.txt pins {pin.version}"
        hashes = [option.split("=", 1)[1] for option in line.split()[1:]]
        assert sorted(hashes) == sorted(pin.hashes), f"{req.name}: hashes differ from requirements.txt"


def test_the_ee_requirements_hold_every_run_time_dependency_of_what_they_pin():
    pinned = {canonicalize_name(pin.name): pin for pin in ee_lock.read_lock(ROOT / "meta/ee-requirements.txt").values()}
    for key, pin in pinned.items():
        assert metadata.version(pin.name) == pin.version, f"{pin.name}: the virtualenv is not requirements.txt's (make setup)"
        for text in metadata.requires(pin.name) or ():
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({**ee_lock.TARGET, "extra": ""}):
                continue
            dep = pinned.get(canonicalize_name(req.name))
            assert dep is not None, f"{pin.name} needs {req} on the EE's interpreter; meta/ee-requirements.txt lacks it"
            assert req.specifier.contains(dep.version, prereleases=True), f"{pin.name} needs {req}; pinned {dep.version}"
    top = [canonicalize_name(req.name) for req, _version in ee_lock.read_in(ROOT / "meta/ee-requirements.in")]
    assert set(top) <= set(pinned)


def test_the_lock_targets_the_ee_interpreter():
    interpreter = _definition()["dependencies"]["python_interpreter"]
    assert interpreter["package_system"] == f"python{ee_lock.TARGET['python_version']}"
    assert interpreter["python_path"].endswith(f"python{ee_lock.TARGET['python_version']}")


def test_ee_lock_reads_pip_compile_output_and_refuses_what_it_cannot_lock(tmp_path):
    good = "0123456789abcdef" * 4
    lock = tmp_path / "requirements.txt"
    lock.write_text(
        "# header\n--index-url https://pypi.org/simple\n"
        f"six==1.17.0 \\\n    --hash=sha256:{good} \\\n    --hash=sha256:{'f' * 64}\n    # via python-dateutil\n"
        f"python-dateutil==2.9.0.post0 \\\n    --hash=sha256:{'a' * 64}\n    # via -r requirements.in\n"
        f"urllib3==2.8.0\n")
    pins = ee_lock.read_lock(lock)
    assert pins["six"].hashes == (f"sha256:{good}", f"sha256:{'f' * 64}")
    assert pins["python-dateutil"].version == "2.9.0.post0" and pins["urllib3"].hashes == ()
    out = tmp_path / "ee-requirements.txt"
    in_file = tmp_path / "ee-requirements.in"
    in_file.write_text("# top\npython-dateutil==2.9.0.post0\n")
    written = _run("tools/ee-lock.py", "--in", in_file, "--lock", lock, "--out", out)
    assert written.returncode == 0, written.stderr
    assert [line for line in out.read_text().splitlines() if not line.startswith("#")] == [
        f"python-dateutil==2.9.0.post0 --hash=sha256:{'a' * 64}",
        f"six==1.17.0 --hash=sha256:{good} --hash=sha256:{'f' * 64}"]
    assert _run("tools/ee-lock.py", "--check", "--in", in_file, "--lock", lock, "--out", out).returncode == 0
    out.write_text(out.read_text().replace("six==1.17.0 ", "six==1.16.0 "))
    stale = _run("tools/ee-lock.py", "--check", "--in", in_file, "--lock", lock, "--out", out)
    assert stale.returncode == 1 and "is stale" in stale.stderr
    for text, message in (("python-dateutil==2.8.0\n", "python-dateutil: got 2.8.0; allowed: 2.9.0.post0"),
                          ("python-dateutil>=2.8\n", "allowed: one exact pin"),
                          (f"python-dateutil==2.9.0.post0 --hash=sha256:{good}\n", "no options or hashes"),
                          ("requests==2.34.2\n", "requests is not in requirements.txt"),
                          ("urllib3==2.8.0\n", "urllib3==2.8.0 has no --hash")):
        in_file.write_text(text)
        refused = _run("tools/ee-lock.py", "--in", in_file, "--lock", lock, "--out", tmp_path / "never.txt")
        assert refused.returncode == 2 and message in refused.stderr, (text, refused.stderr)
        assert not (tmp_path / "never.txt").exists()


# --- the collections' own requirements


def _collections():
    """{name: path} of the collections ansible-galaxy installs from collections/requirements.yml (with their
    dependencies), as installed in the virtualenv at the versions that file pins."""
    root = Path(sysconfig.get_paths()["purelib"]) / "ansible_collections"
    wanted = {c["name"]: c.get("version") for c in yaml.safe_load((ROOT / "collections/requirements.yml").read_text())["collections"]}
    found, queue = {}, list(wanted)
    while queue:
        name = queue.pop()
        if name in found:
            continue
        path = root.joinpath(*name.split("."))
        info = json.loads((path / "MANIFEST.json").read_text())["collection_info"]
        if wanted.get(name):
            assert info["version"] == wanted[name], f"{name} {info['version']} installed, {wanted[name]} in collections/requirements.yml"
        found[name] = path
        queue.extend(info.get("dependencies") or {})
    return found


def _python_requirements(path):
    """The Python requirements ansible-builder reads from an installed collection (its own introspect code)."""
    pip_lines, _bindep = introspect.process_collection(str(path))
    return [Requirement(line) for line in introspect.strip_comments({"c": pip_lines}).get("c", [])]


def test_every_python_requirement_of_the_collections_is_excluded_and_pinned():
    excluded = {canonicalize_name(n) for n in _definition()["dependencies"]["exclude"]["python"]}
    pinned = {canonicalize_name(pin.name): pin.version for pin in ee_lock.read_lock(ROOT / "meta/ee-requirements.txt").values()}
    named = set()
    collections = _collections()
    assert {"amazon.aws", "community.aws", "kubernetes.core", "awx.awx"} <= set(collections)
    for collection, path in sorted(collections.items()):
        for req in _python_requirements(path):
            key = canonicalize_name(req.name)
            if req.name.lower() in introspect.EXCLUDE_REQUIREMENTS:
                continue  # ansible-builder drops these itself (pyyaml, ansible-core, test tools)
            named.add(key)
            if key in NOT_INSTALLED:
                assert NOT_INSTALLED[key] == collection, f"{req} of {collection}: only {NOT_INSTALLED[key]}'s may be left out"
                assert key not in pinned
                continue
            assert key in pinned, f"{collection} needs {req}: not in meta/ee-requirements.txt (add it to meta/ee-requirements.in)"
            assert req.specifier.contains(pinned[key], prereleases=True), f"{collection} needs {req}; pinned {pinned[key]}"
    # The exclusion list is exactly what the collections name: nothing of theirs reaches pip unhashed,
    # and no stale name hides a requirement a future collection version adds.
    assert excluded == named


def test_the_image_build_installs_only_hashed_python_requirements(tmp_path):
    """ansible-builder create on a copy of the definition (absolute paths, without the collection's
    tarball), then the introspect command of its Containerfile on the collections it installs."""
    definition = _definition()
    for key in ("galaxy", "python", "system"):
        definition["dependencies"][key] = str(ROOT / definition["dependencies"][key])
    definition.pop("additional_build_files")
    definition.pop("additional_build_steps")
    (tmp_path / "execution-environment.yml").write_text(yaml.safe_dump(definition))
    context = tmp_path / "context"
    created = subprocess.run([str(BIN / "ansible-builder"), "create", "-f", "execution-environment.yml", "--context", str(context)],
                             cwd=tmp_path, capture_output=True, text=True, check=False)
    assert created.returncode == 0, created.stdout + created.stderr
    containerfile = next(p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()).read_text()
    command = next(line for line in containerfile.splitlines() if "introspect.py introspect" in line)
    args = shlex.split(command.split("introspect.py", 1)[1])
    args = [arg.replace("/tmp/src/", f"{tmp_path}/out-") for arg in args]
    folder = tmp_path / "collections"
    for name, path in _collections().items():
        link = folder / "ansible_collections" / name.replace(".", "/")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(path)
    ran = _run(context / "_build/scripts/introspect.py", *args, folder, cwd=context / "_build")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = [line for line in (tmp_path / "out-requirements.txt").read_text().splitlines() if line.strip()]
    ours = [line for line in (ROOT / "meta/ee-requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert lines == ours, "pip would get lines without hashes (or miss ours)"
    # The collections' system requirements are kept: only their Python ones are excluded.
    bindep = (tmp_path / "out-bindep.txt").read_text()
    assert "buildah" in bindep and "# from collection kubernetes.core" in bindep


# --- the base image


INDEX = json.dumps({
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.index.v1+json",
    "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 1,
                   "digest": "sha256:" + "1" * 64, "platform": {"architecture": "amd64", "os": "linux"}}],
}).encode()
INDEX_DIGEST = "sha256:" + hashlib.sha256(INDEX).hexdigest()
TOKEN = "anonymous-pull-token"


class _Registry:
    """A registry with the OCI distribution API's manifest endpoint for centos/centos:stream9 and a token service:
    a request without the bearer token gets 401 and the challenge that points at the token service."""

    def __init__(self):
        self.requests = []
        self.digest_header = True
        self.status = 200
        self.content_type = "application/vnd.oci.image.index.v1+json"
        self.realm = None
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def _send(self, status, headers=(), body=b""):
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command == "GET":
                    self.wfile.write(body)

            def _answer(self, body):
                url = urlsplit(self.path)
                registry.requests.append((self.command, url.path, parse_qs(url.query), dict(self.headers)))
                if url.path == "/token":
                    query = parse_qs(url.query)
                    ok = query == {"service": ["registry.test"], "scope": ["repository:centos/centos:pull"]}
                    return self._send(200 if ok else 400, [("Content-Type", "application/json")],
                                      json.dumps({"token": TOKEN}).encode() if ok else b"{}")
                if url.path != "/v2/centos/centos/manifests/stream9":
                    return self._send(404)
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    realm = registry.realm or f"http://127.0.0.1:{registry.port}/token"
                    challenge = f'Bearer realm="{realm}",service="registry.test",scope="repository:centos/centos:pull"'
                    return self._send(401, [("WWW-Authenticate", challenge)])
                if registry.status != 200:
                    return self._send(registry.status)
                headers = [("Content-Type", registry.content_type)]
                if registry.digest_header:
                    headers.append(("Docker-Content-Digest", INDEX_DIGEST))
                return self._send(200, headers, INDEX)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.image = f"127.0.0.1:{self.port}/centos/centos:stream9"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def paths(self):
        return [(method, path) for method, path, _query, _headers in self.requests]


@pytest.fixture
def registry():
    served = _Registry()
    served.thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


def _context(tmp_path, image):
    """A definition naming `image` and the build context ansible-builder would write for it."""
    (tmp_path / "execution-environment.yml").write_text(yaml.safe_dump({"version": 3, "images": {"base_image": {"name": image}}}))
    context = tmp_path / "context"
    context.mkdir()
    (context / "Containerfile").write_text(f'ARG EE_BASE_IMAGE="{image.split("@")[0]}"\nARG PYCMD="/usr/bin/python3.11"\n\n'
                                           "FROM $EE_BASE_IMAGE AS base\n")
    return context


def _pin(tmp_path, context, *extra, env=None):
    return _run("tools/ee-pin-base.py", "-f", tmp_path / "execution-environment.yml", "--context", context,
                "--timeout", "10", *extra, env=env)


def _base_arg(context):
    return (context / "Containerfile").read_text().splitlines()[0]


def test_the_base_image_tag_is_resolved_to_its_digest_through_the_token_flow(tmp_path, registry):
    context = _context(tmp_path, registry.image)
    pinned = _pin(tmp_path, context, "--plain-http")
    assert pinned.returncode == 0, pinned.stderr
    reference = f"{registry.image}@{INDEX_DIGEST}"
    assert _base_arg(context) == f'ARG EE_BASE_IMAGE="{reference}"'
    assert (context / "base-image.txt").read_text() == reference + "\n"
    assert reference in pinned.stdout
    # 401 and its challenge, an anonymous token, then the manifest's digest from a HEAD.
    assert registry.paths() == [("HEAD", "/v2/centos/centos/manifests/stream9"), ("GET", "/token"),
                                ("HEAD", "/v2/centos/centos/manifests/stream9")]
    first, token, second = (headers for _method, _path, _query, headers in registry.requests)
    assert "Authorization" not in first and "Authorization" not in token
    assert second["Authorization"] == f"Bearer {TOKEN}"
    accepted = {value.strip() for value in second["Accept"].split(",")}
    assert {"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"} <= accepted


def test_without_a_digest_header_the_digest_is_the_sha256_of_the_manifest(tmp_path, registry):
    registry.digest_header = False
    context = _context(tmp_path, registry.image)
    pinned = _pin(tmp_path, context, "--plain-http")
    assert pinned.returncode == 0, pinned.stderr
    assert _base_arg(context) == f'ARG EE_BASE_IMAGE="{registry.image}@{INDEX_DIGEST}"'
    assert ("GET", "/v2/centos/centos/manifests/stream9") in registry.paths()


def test_a_given_digest_is_used_without_asking_the_registry(tmp_path, registry):
    digest = "sha256:" + "ab" * 32
    context = _context(tmp_path, registry.image)
    pinned = _pin(tmp_path, context, "--plain-http", env={"EE_BASE_IMAGE_DIGEST": digest})
    assert pinned.returncode == 0, pinned.stderr
    assert _base_arg(context) == f'ARG EE_BASE_IMAGE="{registry.image}@{digest}"'
    assert "EE_BASE_IMAGE_DIGEST" in pinned.stdout
    # A digest in the definition itself is kept as it is, also over EE_BASE_IMAGE_DIGEST.
    in_definition = f"{registry.image}@sha256:{'cd' * 32}"
    (tmp_path / "pinned").mkdir()
    context = _context(tmp_path / "pinned", in_definition)
    pinned = _pin(tmp_path / "pinned", context, "--plain-http", env={"EE_BASE_IMAGE_DIGEST": digest})
    assert pinned.returncode == 0, pinned.stderr
    assert _base_arg(context) == f'ARG EE_BASE_IMAGE="{in_definition}"'
    assert registry.requests == []


@pytest.mark.parametrize("case, reason", [
    ("unknown tag", "HTTP 404"),
    ("server error", "HTTP 500"),
    ("html", "got Content-Type 'text/html'"),
    ("bad digest", "EE_BASE_IMAGE_DIGEST: got 'sha256:abc'; allowed: sha256:<64 lowercase hex>"),
    ("no registry", "ConnectionError"),
    ("http realm elsewhere", "refusing 'http://registry.example.com/token'"),
    ("plain http elsewhere", "refusing 'http://registry.example.com/v2/centos/centos/manifests/stream9'"),
])
def test_no_unpinned_base_image_is_left_in_the_context(tmp_path, registry, case, reason):
    image, env, extra = registry.image, None, ["--plain-http"]
    if case == "unknown tag":
        registry.status = 404
    elif case == "server error":
        registry.status = 500
    elif case == "html":
        registry.content_type = "text/html"
    elif case == "bad digest":
        env = {"EE_BASE_IMAGE_DIGEST": "sha256:abc"}
    elif case == "no registry":
        registry.server.shutdown()
        registry.server.server_close()
    elif case == "http realm elsewhere":
        registry.realm = "http://registry.example.com/token"  # a token over plain http beyond this host: refused
    else:
        image = "registry.example.com/centos/centos:stream9"  # refused before any request
    context = _context(tmp_path, image)
    pinned = _pin(tmp_path, context, *extra, env=env)
    assert pinned.returncode == 1, pinned.stdout
    assert "the base image is not pinned: " in pinned.stderr and reason in pinned.stderr, pinned.stderr
    assert "set EE_BASE_IMAGE_DIGEST=sha256:" in pinned.stderr and "removed" in pinned.stderr
    assert not (context / "Containerfile").exists() and not (context / "base-image.txt").exists()


@pytest.mark.parametrize("text, host, repository, tag, digest", [
    ("quay.io/centos/centos:stream9", "quay.io", "centos/centos", "stream9", ""),
    ("centos:stream9", "registry-1.docker.io", "library/centos", "stream9", ""),
    ("docker.io/library/python:3.11", "registry-1.docker.io", "library/python", "3.11", ""),
    ("localhost:5000/a/b:t@sha256:" + "e" * 64, "localhost:5000", "a/b", "t", "sha256:" + "e" * 64),
    ("registry.example.com:8443/ml/ee", "registry.example.com:8443", "ml/ee", "", ""),
])
def test_image_references_are_split_for_the_registry_api(text, host, repository, tag, digest):
    reference = ee_pin_base.Reference(text)
    assert (reference.api_host, reference.repository, reference.tag, reference.digest) == (host, repository, tag, digest)
    with pytest.raises(ee_pin_base.PinError):
        ee_pin_base.Reference("quay.io/centos/centos:stream9@sha256:short")
