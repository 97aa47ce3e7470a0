# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-ins of the platform's images in the rehearsal's registry, so that
trainium.eks.image_digest pins them by digest as it does on AWS.

The platform roles run their images by digest (resolved from the registry
once, recorded in the cluster). The rehearsal cannot reach public.ecr.aws,
quay.io or the EKS add-on registries, and kwok's nodes pull nothing, so each
image the roles' defaults name gets a stand-in under
``<rehearsal registry>/mirror/<registry host>/<repository>:<tag>``: a small
image (one layer holding STANDIN.txt, which says what it stands in for) whose
digest is its own, not the real image's. The local inventory names that
mirror (``trainium_image_mirrors: {"*": <registry>/mirror}``): the digest is
read there, the pod keeps the real name.

What is pushed comes from the roles' defaults (every ``*_image`` that is a
plain reference, and the EFA device plugin's EKS add-on registry reference for
the region), so a version bump there is seeded on the next ``up``.

    platform_images.py --registry 127.0.0.1:5050 --password-file F --ca-file CA [--region us-west-2] [--list]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path

import requests
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLATFORM_ROLES = ("neuron_device_plugin", "efa_device_plugin", "neuron_monitor", "etcd", "fsx_csi")
MIRROR_PREFIX = "mirror"
USER = "trainium"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"


def _defaults(role):
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text(encoding="utf-8")) or {}


def platform_references(region):
    """Every image reference the platform roles' defaults run, for the region (the EFA plugin's registry is regional)."""
    references = []
    for role in PLATFORM_ROLES:
        defaults = _defaults(role)
        for name, value in defaults.items():
            if name.endswith("_image") and isinstance(value, str) and value and "{" not in value:
                references.append(value)
    efa = _defaults("efa_device_plugin")
    if not efa.get("efa_device_plugin_image"):
        account = efa["efa_device_plugin_ecr_accounts"][region]
        domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.eu" if region.startswith("eusc-") else "amazonaws.com"
        references.append(f"{account}.dkr.ecr.{region}.{domain}/eks/aws-efa-k8s-device-plugin:{efa['efa_device_plugin_image_tag']}")
    return sorted(set(references))


def mirror_path(reference):
    """(repository under the mirror, tag) of host/repository:tag."""
    name, tag = reference.rsplit(":", 1)
    return f"{MIRROR_PREFIX}/{name}", tag


def _layer(reference):
    """(gzip bytes, uncompressed sha256) of the stand-in's one layer: STANDIN.txt, byte-for-byte the same each time."""
    text = (f"trainium.eks rehearsal stand-in for {reference}.\n"
            "kwok's fake nodes pull no image: only this image's digest is used, to pin the reference as on AWS.\n").encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("STANDIN.txt")
        info.size, info.mtime, info.mode = len(text), 0, 0o644
        tar.addfile(info, io.BytesIO(text))
    plain = raw.getvalue()
    return gzip.compress(plain, mtime=0), "sha256:" + hashlib.sha256(plain).hexdigest()


def _blob(content):
    return "sha256:" + hashlib.sha256(content).hexdigest()


class Registry:
    def __init__(self, registry, password, ca_file):
        self.base = f"https://{registry}"
        self.session = requests.Session()
        self.session.auth = (USER, password)
        # Per request: a Session's own verify loses to REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE from the environment.
        self.verify = ca_file

    def _call(self, method, url, **kwargs):
        return self.session.request(method, url, verify=self.verify, timeout=kwargs.pop("timeout", 30), **kwargs)

    def has(self, repository, tag):
        answer = self._call("HEAD", f"{self.base}/v2/{repository}/manifests/{tag}", headers={"Accept": MANIFEST_TYPE})
        return answer.status_code == 200

    def push_blob(self, repository, content):
        digest = _blob(content)
        if self._call("HEAD", f"{self.base}/v2/{repository}/blobs/{digest}").status_code == 200:
            return digest
        started = self._call("POST", f"{self.base}/v2/{repository}/blobs/uploads/")
        started.raise_for_status()
        location = started.headers["Location"]
        if location.startswith("/"):
            location = self.base + location
        if not location.startswith(self.base + "/"):
            raise RuntimeError(f"the registry sent the upload elsewhere ({location}); the login goes to {self.base} only")
        done = self._call("PUT", location, params={"digest": digest}, data=content,
                          headers={"Content-Type": "application/octet-stream"}, timeout=60)
        done.raise_for_status()
        return digest

    def push(self, reference):
        repository, tag = mirror_path(reference)
        layer, diff_id = _layer(reference)
        config = json.dumps({
            "architecture": "amd64", "os": "linux",
            "config": {"Labels": {"org.opencontainers.image.ref.name": reference,
                                  "org.opencontainers.image.description": "trainium.eks rehearsal stand-in; kwok's nodes pull nothing"}},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }, sort_keys=True).encode()
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": MANIFEST_TYPE,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": self.push_blob(repository, config),
                       "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": self.push_blob(repository, layer),
                        "size": len(layer)}],
        }, sort_keys=True).encode()
        answer = self._call("PUT", f"{self.base}/v2/{repository}/manifests/{tag}", data=manifest,
                            headers={"Content-Type": MANIFEST_TYPE})
        answer.raise_for_status()
        return answer.headers.get("Docker-Content-Digest") or _blob(manifest)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--registry", default=os.environ.get("TRAINIUM_REHEARSAL_REGISTRY") or os.environ.get("TRAINIUM_REGISTRY"))
    parser.add_argument("--password-file", default=os.environ.get("TRAINIUM_REHEARSAL_REGISTRY_PASSWORD_FILE"))
    parser.add_argument("--ca-file", default=os.environ.get("TRAINIUM_REGISTRY_CA_FILE"))
    parser.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION") or "us-west-2")
    parser.add_argument("--list", action="store_true", help="print the references and exit")
    args = parser.parse_args(argv)
    references = platform_references(args.region)
    if args.list:
        print("\n".join(references))
        return 0
    if not (args.registry and args.password_file and args.ca_file):
        parser.error("--registry, --password-file and --ca-file are required")
    registry = Registry(args.registry, Path(args.password_file).read_text(encoding="utf-8").strip(), args.ca_file)
    pushed = 0
    for reference in references:
        repository, tag = mirror_path(reference)
        if registry.has(repository, tag):
            continue
        digest = registry.push(reference)
        pushed += 1
        print(f"[rehearsal] registry: stand-in for {reference} at {args.registry}/{repository}:{tag} ({digest[:19]}...)")
    print(f"[rehearsal] registry: {len(references)} platform image stand-ins under {args.registry}/{MIRROR_PREFIX}/ ({pushed} pushed now)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
