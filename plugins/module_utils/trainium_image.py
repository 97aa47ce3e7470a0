# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Container image helpers of trainium.eks.container_image (unit-tested).

- :func:`context_digest` / :func:`content_tag`: the content-addressed tag of a
  build context (sorted relative paths, file contents, modes, build args);
- :func:`detect_builder`: buildah, podman or docker, whichever is present first;
- :func:`decode_token` and :func:`auth_file`: ECR's token as a registry login
  in a private temporary auth file (never on a command line);
- :class:`Registry`: the registry v2 manifest check (HEAD, basic auth, own CA);
- :func:`build_command` / :func:`push_command`: the builder's command lines.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import hashlib
import json
import os
import shutil
import stat
import tempfile
import urllib.error

from ansible.module_utils.urls import open_url

try:
    import botocore
except ImportError:
    pass  # AnsibleAWSModule reports a missing botocore

BUILDERS = ("buildah", "podman", "docker")
# The Debian packages that provide each builder.
BUILDER_PACKAGES = {"buildah": "buildah", "podman": "podman", "docker": "docker.io"}
MANIFEST_ACCEPT = ", ".join((
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
))
HASH_LENGTH = 12


class ImageError(Exception):
    """A failure to report as the module's message."""


def _file_mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def context_files(context_dir):
    """Sorted relative paths (POSIX separators) of every file and symlink under context_dir."""
    found = []
    for top, dirs, files in os.walk(context_dir):
        dirs.sort()
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            relative = os.path.relpath(os.path.join(top, name), context_dir)
            found.append(relative.replace(os.sep, "/"))
    return sorted(set(found))


def context_digest(context_dir, build_args=None, extra_files=()):
    """sha256 hex over the context: each file's relative path, mode and content (a symlink's target), then
    the build args (sorted JSON) and any extra (name, path) files such as a Containerfile outside the context."""
    digest = hashlib.sha256()
    entries = [(relative, os.path.join(context_dir, relative)) for relative in context_files(context_dir)]
    entries += [(f"<{name}>", path) for name, path in extra_files]
    for relative, path in entries:
        digest.update(relative.encode("utf-8") + b"\0")
        digest.update(f"{_file_mode(path):04o}".encode("ascii") + b"\0")
        if os.path.islink(path):
            digest.update(b"link:" + os.readlink(path).encode("utf-8"))
        else:
            content = hashlib.sha256()
            with open(path, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    content.update(chunk)
            digest.update(content.hexdigest().encode("ascii"))
        digest.update(b"\n")
    args = {str(key): str(value) for key, value in (build_args or {}).items()}
    digest.update(b"build-args:" + json.dumps(args, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def content_tag(tag_prefix, context_dir, build_args=None, extra_files=()):
    """``<tag_prefix>-<first 12 hex of context_digest>`` (just the hash when the prefix is empty)."""
    short = context_digest(context_dir, build_args, extra_files)[:HASH_LENGTH]
    return f"{tag_prefix}-{short}" if tag_prefix else short


def detect_builder(preference="auto", which=shutil.which):
    """(name, path) of the builder to use: the one asked for, or with auto the first of buildah, podman, docker."""
    names = BUILDERS if preference == "auto" else (preference,)
    for name in names:
        path = which(name)
        if path:
            return name, path
    packages = ", ".join(f"{name} (Debian package {BUILDER_PACKAGES[name]})" for name in BUILDERS)
    wanted = "none of buildah, podman or docker is" if preference == "auto" else f"{preference} is not"
    raise ImageError(f"no container image builder: {wanted} on PATH; install one of {packages}")


def split_repository_uri(repository_uri):
    """(registry host[:port], repository path) of ``host/path/name``."""
    uri = repository_uri.split("://", 1)[-1].rstrip("/")
    host, sep, path = uri.partition("/")
    if not sep or not path or not host:
        raise ImageError(f"repository_uri: got {repository_uri!r}; allowed: <registry host>/<repository>, such as an ECR repositoryUri")
    return host, path


def decode_token(authorization_token):
    """(user, password) of an ECR authorizationToken (base64 of ``user:password``)."""
    try:
        decoded = base64.b64decode(authorization_token, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as e:
        raise ImageError(f"the ECR authorization token is not base64 of user:password ({type(e).__name__})") from None
    user, sep, password = decoded.partition(":")
    if not sep or not user or not password:
        raise ImageError("the ECR authorization token is not base64 of user:password")
    return user, password


def ecr_login(module, purpose=""):
    """(user, password) of ECR's GetAuthorizationToken for an AnsibleAWSModule, both masked in any output.
    ``purpose`` (such as "quay.io asks for a basic login: ") starts the message of a failure."""
    try:
        data = module.client("ecr").get_authorization_token()["authorizationData"]
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        module.fail_json_aws(e, msg=f"{purpose}Failed to get an ECR authorization token (ecr:GetAuthorizationToken)")
    if not data:
        module.fail_json(msg=f"{purpose}ECR's GetAuthorizationToken returned no authorization data")
    module.no_log_values.add(data[0]["authorizationToken"])
    user, password = decode_token(data[0]["authorizationToken"])
    module.no_log_values.add(password)
    return user, password


@contextlib.contextmanager
def auth_file(registry, user, password, directory=None):
    """A temporary directory (mode 0700) holding auth.json (mode 0600) with the login for registry, in the
    format buildah/podman --authfile and docker --config read; removed on exit, also after an error.
    Yields the path of auth.json (its directory has a copy named config.json for docker)."""
    workdir = tempfile.mkdtemp(prefix="trainium-image-auth-", dir=directory)
    try:
        os.chmod(workdir, 0o700)
        auth = base64.b64encode(f"{user}:{password}".encode("utf-8")).decode("ascii")
        content = json.dumps({"auths": {registry: {"auth": auth}}})
        paths = [os.path.join(workdir, "auth.json"), os.path.join(workdir, "config.json")]
        for path in paths:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(content)
        yield paths[0]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def ca_bundle(ca_dir, directory):
    """Write every *.crt / *.pem CA of ca_dir into one PEM file in directory; its path (None without ca_dir)."""
    if not ca_dir:
        return None
    cas = sorted(glob.glob(os.path.join(ca_dir, "*.crt")) + glob.glob(os.path.join(ca_dir, "*.pem")))
    if not cas:
        raise ImageError(f"registry_ca_dir: got {ca_dir!r}; allowed: a directory with the registry's CA certificate as *.crt")
    bundle = os.path.join(directory, "registry-ca.pem")
    with open(bundle, "w", encoding="utf-8") as out:
        for path in cas:
            with open(path, encoding="utf-8") as handle:
                out.write(handle.read().rstrip("\n") + "\n")
    return bundle


class Registry:
    """The registry v2 API of one repository, with basic auth (the CA bundle of ca_path, else the system's)."""

    def __init__(self, registry, user, password, ca_path=None, opener=open_url, timeout=30):
        self.base = f"https://{registry}"
        self.registry = registry
        self.authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode("utf-8")).decode("ascii")
        self.ca_path = ca_path
        self.opener = opener
        self.timeout = timeout

    def _request(self, method, path):
        headers = {"Accept": MANIFEST_ACCEPT, "Authorization": self.authorization}
        try:
            answer = self.opener(self.base + path, method=method, headers=headers, timeout=self.timeout,
                                 ca_path=self.ca_path, use_netrc=False)
            return answer.status, answer.headers
        except urllib.error.HTTPError as error:
            return error.code, error.headers
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ImageError(f"the registry {self.registry} did not answer {method} {path}: {reason}") from None

    def manifest_digest(self, repository, tag):
        """The digest of repository:tag, or None when the registry has no such tag."""
        status, headers = self._request("HEAD", f"/v2/{repository}/manifests/{tag}")
        if status == 200:
            return (headers or {}).get("Docker-Content-Digest") or "unknown"
        if status == 404:
            return None
        if status in (401, 403):
            raise ImageError(f"the registry {self.registry} refused the ECR token for {repository} (HTTP {status})")
        raise ImageError(f"the registry {self.registry} answered HTTP {status} to HEAD /v2/{repository}/manifests/{tag}")


def build_command(builder, path, builder_options, containerfile, context_dir, image, build_args=None,
                  isolation=None, cert_dir=None, authfile=None):
    """The command line that builds context_dir into image (no secret on it: the login is in authfile)."""
    args = [path, *builder_options]
    if builder == "docker":
        if authfile:
            args += ["--config", os.path.dirname(authfile)]
        args += ["build"]
    else:
        args += ["build"]
        if isolation:
            args += ["--isolation", isolation]
        if authfile:
            args += ["--authfile", authfile]
        if cert_dir:
            args += ["--cert-dir", cert_dir]
    for key in sorted(build_args or {}):
        args += ["--build-arg", f"{key}={build_args[key]}"]
    args += ["-f", containerfile, "-t", image, context_dir]
    return args


def push_command(builder, path, builder_options, image, authfile=None, cert_dir=None, digestfile=None):
    """The command line that pushes image to its registry."""
    args = [path, *builder_options]
    if builder == "docker":
        if authfile:
            args += ["--config", os.path.dirname(authfile)]
        return args + ["push", image]
    args += ["push"]
    if authfile:
        args += ["--authfile", authfile]
    if cert_dir:
        args += ["--cert-dir", cert_dir]
    if digestfile:
        args += ["--digestfile", digestfile]
    return args + [image, f"docker://{image}"]


def remove_command(builder, path, builder_options, image):
    """The command line that removes the local copy of image after its push."""
    return [path, *builder_options, "rmi", image] if builder != "docker" else [path, *builder_options, "image", "rm", image]


def base_images(containerfile_text):
    """The images the FROM lines name (stage names and scratch left out)."""
    found, stages = [], set()
    for line in containerfile_text.splitlines():
        words = line.strip().split()
        if len(words) >= 2 and words[0].upper() == "FROM":
            rest = [w for w in words[1:] if not w.startswith("--")]
            if not rest:
                continue
            if rest[0] not in stages and rest[0] != "scratch":
                found.append(rest[0])
            if len(rest) >= 3 and rest[1].upper() == "AS":
                stages.add(rest[2])
    return found


def last_lines(text, count=15):
    """The last count non-empty lines of a builder's output."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return "\n".join(lines[-count:])


PULL_FAILURE_MARKERS = ("error creating build container", "initializing source", "pulling image", "manifest unknown",
                        "failed to resolve source metadata", "pull access denied", "error pulling image",
                        "failed to pull", "reading manifest")


def looks_like_pull_failure(output):
    """Whether a failed build's output says the base image could not be pulled."""
    lowered = (output or "").lower()
    return any(marker in lowered for marker in PULL_FAILURE_MARKERS)
