# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pin the execution environment's base image by digest in a build context
that `ansible-builder create` wrote (`make ee` runs it on .build/ee).

    .venv/bin/python tools/ee-pin-base.py --context .build/ee
    EE_BASE_IMAGE_DIGEST=sha256:<64 hex> .venv/bin/python tools/ee-pin-base.py --context .build/ee

The digest comes from, in this order:
1. images.base_image.name of execution-environment.yml, when it already
   ends in @sha256:<digest>: used as is, nothing is asked;
2. EE_BASE_IMAGE_DIGEST (or --digest): the digest of the tag's manifest or
   image index, used without asking the registry (for a machine that cannot
   reach it, or to pin a digest reviewed elsewhere);
3. the registry, through the OCI distribution API: HEAD
   /v2/<repository>/manifests/<tag> asking for an image index or manifest,
   with the anonymous bearer token that the registry's WWW-Authenticate
   challenge points at (quay.io and Docker Hub work that way); the digest is
   the Docker-Content-Digest header, or the sha256 of the manifest's bytes
   when the registry sends no such header.

The context's Containerfile (or Dockerfile) then names the base image as
<name>:<tag>@sha256:<digest> (ARG EE_BASE_IMAGE, which FROM reads), the
reference is printed and written to <context>/base-image.txt. When no digest
can be had, nothing pinned is written, the context's Containerfile (which
names the image by tag only) is removed, and the message says what to set.
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import requests
import requests.utils
import yaml

ROOT = Path(__file__).resolve().parents[1]
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
ARG_LINE = re.compile(r'^ARG EE_BASE_IMAGE=(?P<value>.*)$', re.M)
# What a tag may point at: an image index (multi-architecture) or a single manifest.
ACCEPT = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
DOCKER_HUB = ("docker.io", "index.docker.io", "registry-1.docker.io")
RECORD = "base-image.txt"
HOW_TO_PIN = ("set EE_BASE_IMAGE_DIGEST=sha256:<digest> (the sha256 of the tag's image index as the registry "
              "serves it, e.g. from a machine that reaches it: `skopeo inspect --raw docker://{image} | sha256sum`), "
              "or name the base image with @sha256:<digest> in execution-environment.yml")


class PinError(Exception):
    """Why no digest could be had; printed as one line."""


class Reference:
    """An image reference split as the registry API needs it: host, repository, tag, digest."""

    def __init__(self, text):
        self.text = text
        rest, _sep, self.digest = text.partition("@")
        first, slash, remainder = rest.partition("/")
        if slash and ("." in first or ":" in first or first == "localhost"):
            self.host, path = first, remainder
        else:
            self.host, path = "docker.io", rest
        if self.host in DOCKER_HUB and "/" not in path:
            path = f"library/{path}"
        name, colon, tag = path.rpartition(":")
        if not colon or "/" in tag:
            name, tag = path, ""
        self.repository, self.tag = name, tag
        if not self.repository or (self.digest and not DIGEST.fullmatch(self.digest)):
            raise PinError(f"images.base_image.name: got {text!r}; allowed: [host/]repository:tag[@sha256:<64 hex>]")

    @property
    def api_host(self):
        return "registry-1.docker.io" if self.host in DOCKER_HUB else self.host

    def pinned(self, digest):
        return f"{self.text.split('@', 1)[0]}@{digest}"


def _loopback(host):
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_url(url, plain_http):
    parts = urlsplit(url)
    if parts.scheme == "https" or (plain_http and parts.scheme == "http" and _loopback(parts.hostname or "")):
        return url
    raise PinError(f"refusing {url!r}: only https:// (plain http only to a loopback registry with --plain-http)")


def _bearer_token(session, challenge, reference, plain_http, timeout):
    """An anonymous pull token from the realm of a `WWW-Authenticate: Bearer ...` challenge."""
    scheme, _sep, params = challenge.partition(" ")
    if scheme.lower() != "bearer":
        raise PinError(f"{reference.api_host} asks for credentials ({challenge or 'no WWW-Authenticate challenge'}), "
                       "not for an anonymous bearer token")
    fields = requests.utils.parse_dict_header(params)
    if not fields.get("realm"):
        raise PinError(f"{reference.api_host}: bearer challenge without realm: {challenge!r}")
    query = {"scope": fields.get("scope") or f"repository:{reference.repository}:pull"}
    if fields.get("service"):
        query["service"] = fields["service"]
    response = session.get(_check_url(fields["realm"], plain_http), params=query, timeout=timeout)
    if response.status_code != 200:
        raise PinError(f"token from {fields['realm']}: HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        raise PinError(f"token from {fields['realm']}: not JSON") from None
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not token:
        raise PinError(f"token from {fields['realm']}: no token in the answer")
    return token


def resolve(reference, plain_http=False, timeout=30.0):
    """The digest of the manifest (or image index) the reference's tag points at, asked of its registry."""
    if not reference.tag:
        raise PinError(f"{reference.text}: no tag to resolve")
    scheme = "http" if plain_http else "https"
    url = _check_url(f"{scheme}://{reference.api_host}/v2/{reference.repository}/manifests/{reference.tag}", plain_http)
    headers = {"Accept": ", ".join(ACCEPT)}
    with requests.Session() as session:
        try:
            response = session.head(url, headers=headers, timeout=timeout, allow_redirects=True)
            if response.status_code == 401:
                token = _bearer_token(session, response.headers.get("WWW-Authenticate", ""), reference, plain_http, timeout)
                headers["Authorization"] = f"Bearer {token}"
                response = session.head(url, headers=headers, timeout=timeout, allow_redirects=True)
            if response.status_code != 200:
                raise PinError(f"HEAD {url}: HTTP {response.status_code}")
            digest = response.headers.get("Docker-Content-Digest", "")
            media_type = response.headers.get("Content-Type", "").split(";")[0].strip()
            if not digest:
                # The digest of a manifest is the sha256 of its bytes as the registry serves them.
                response = session.get(url, headers=headers, timeout=timeout, allow_redirects=True)
                if response.status_code != 200:
                    raise PinError(f"GET {url}: HTTP {response.status_code}")
                digest = "sha256:" + hashlib.sha256(response.content).hexdigest()
                media_type = response.headers.get("Content-Type", "").split(";")[0].strip()
        except requests.RequestException as exc:
            raise PinError(f"{url}: {exc.__class__.__name__}: {exc}") from None
    if media_type not in ACCEPT:
        raise PinError(f"{url}: got Content-Type {media_type!r}; allowed: {', '.join(ACCEPT)}")
    if not DIGEST.fullmatch(digest):
        raise PinError(f"{url}: got digest {digest!r}; allowed: sha256:<64 lowercase hex>")
    return digest


def pin(definition, digest=None, plain_http=False, timeout=30.0):
    """(pinned reference, where its digest came from)."""
    name = ((yaml.safe_load(Path(definition).read_text(encoding="utf-8")) or {}).get("images") or {}).get("base_image", {}).get("name")
    if not name:
        raise PinError(f"{definition}: images.base_image.name is not set")
    reference = Reference(name)
    if reference.digest:
        return name, str(definition)
    if digest:
        if not DIGEST.fullmatch(digest):
            raise PinError(f"EE_BASE_IMAGE_DIGEST: got {digest!r}; allowed: sha256:<64 lowercase hex>")
        return reference.pinned(digest), "EE_BASE_IMAGE_DIGEST"
    return reference.pinned(resolve(reference, plain_http, timeout)), f"{reference.api_host} (tag {reference.tag})"


def containerfile(context):
    for name in ("Containerfile", "Dockerfile"):
        if (Path(context) / name).is_file():
            return Path(context) / name
    raise PinError(f"{context}: no Containerfile or Dockerfile (run `ansible-builder create` first)")


def write(context, pinned):
    path = containerfile(context)
    text = path.read_text(encoding="utf-8")
    if len(ARG_LINE.findall(text)) != 1:
        raise PinError(f"{path}: expected one `ARG EE_BASE_IMAGE=` line (ansible-builder schema 3)")
    path.write_text(ARG_LINE.sub(lambda _m: f'ARG EE_BASE_IMAGE="{pinned}"', text), encoding="utf-8")
    (Path(context) / RECORD).write_text(pinned + "\n", encoding="utf-8")
    return path


def _discard(context):
    """Remove what would build from the image's tag alone; return what was removed."""
    removed = []
    for name in ("Containerfile", "Dockerfile", RECORD):
        path = Path(context) / name
        if path.is_file():
            match = ARG_LINE.search(path.read_text(encoding="utf-8")) if name != RECORD else None
            if name == RECORD or not match or "@sha256:" not in match.group("value"):
                path.unlink()
                removed.append(str(path))
    return removed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("-f", "--file", type=Path, default=ROOT / "execution-environment.yml", help="the EE definition (default: %(default)s)")
    parser.add_argument("--context", type=Path, required=True, help="the build context `ansible-builder create` wrote")
    parser.add_argument("--digest", default=os.environ.get("EE_BASE_IMAGE_DIGEST", ""),
                        help="sha256:... to use without asking the registry (default: $EE_BASE_IMAGE_DIGEST)")
    parser.add_argument("--plain-http", action="store_true", help="speak plain http to a loopback registry (tests)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per HTTP request (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        pinned, source = pin(args.file, args.digest.strip() or None, args.plain_http, args.timeout)
        path = write(args.context, pinned)
    except PinError as exc:
        image = "<image>"
        try:
            image = yaml.safe_load(args.file.read_text(encoding="utf-8"))["images"]["base_image"]["name"]
        except (OSError, KeyError, TypeError, yaml.YAMLError):
            pass
        removed = _discard(args.context)
        print(f"ee-pin-base: the base image is not pinned: {exc}", file=sys.stderr)
        print(f"ee-pin-base: {HOW_TO_PIN.format(image=image)}", file=sys.stderr)
        if removed:
            print(f"ee-pin-base: removed {', '.join(removed)}: it named the base image by tag only", file=sys.stderr)
        return 1
    print(f"ee-pin-base: base image {pinned} (digest from {source}); written to {path} and {Path(args.context) / RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
