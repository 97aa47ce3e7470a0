# -*- coding: utf-8 -*-
"""tools/rehearsal/platform_images.py: the stand-ins cover every image the platform roles run."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import re
import tarfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("platform_images", ROOT / "tools" / "rehearsal" / "platform_images.py")
platform_images = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(platform_images)


def test_every_image_of_the_platform_roles_has_a_stand_in():
    references = platform_images.platform_references("us-west-2")
    # Each *_image(s) variable a platform role pins through trainium.eks.image_digest is in the list.
    for role in platform_images.PLATFORM_ROLES:
        images_var = yaml.safe_load((ROOT / "roles" / role / "vars" / "main.yml").read_text()).get(f"{role}_images")
        tasks = "\n".join(p.read_text() for p in (ROOT / "roles" / role / "tasks").glob("*.yml"))
        assert images_var or "trainium.eks.image_digest" in tasks, role
    defaults = {role: yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
                for role in platform_images.PLATFORM_ROLES}
    literal = sorted(value for d in defaults.values() for name, value in d.items()
                     if re.search(r"_image$", name) and isinstance(value, str) and value)
    assert set(literal) <= set(references)
    assert "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20" in references
    assert "quay.io/coreos/etcd:v3.5.34" in references and len(references) == len(set(references)) == 9


def test_the_efa_reference_follows_the_region():
    assert "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn/eks/aws-efa-k8s-device-plugin:v0.5.20" in \
        platform_images.platform_references("cn-north-1")


def test_a_stand_in_says_what_it_stands_in_for_and_is_the_same_each_time():
    reference = "quay.io/coreos/etcd:v3.5.34"
    layer, diff_id = platform_images._layer(reference)  # pylint: disable=protected-access
    assert platform_images._layer(reference) == (layer, diff_id)  # pylint: disable=protected-access
    plain = gzip.decompress(layer)
    assert diff_id == "sha256:" + hashlib.sha256(plain).hexdigest()
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        text = tar.extractfile("STANDIN.txt").read().decode()
    assert text.startswith(f"trainium.eks rehearsal stand-in for {reference}.") and "pull no image" in text
    assert platform_images._layer("quay.io/coreos/etcd:v3.5.35")[1] != diff_id  # pylint: disable=protected-access
    assert platform_images.mirror_path(reference) == ("mirror/quay.io/coreos/etcd", "v3.5.34")
