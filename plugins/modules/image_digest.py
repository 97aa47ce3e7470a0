#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: image_digest
short_description: Pin container images by digest, resolved from their registry once and recorded in the cluster
version_added: 0.5.0
description:
  - For each image reference given by tag, asks its registry (OCI distribution API, C(HEAD /v2/<name>/manifests/<tag>))
    which digest the tag names, and returns the reference as C(<name>:<tag>@<digest>), so that what a node pulls
    stays fixed, whatever later happens to the tag upstream.
  - The digests are recorded in a ConfigMap of the cluster (O(record_namespace)/O(record_name), key C(images.json)).
    A reference found there is not asked again, so a rerun pins the same digest and changes nothing. A new tag (a
    version bump in the defaults) is resolved and added. To follow a tag that was moved on purpose, delete its
    entry (or the ConfigMap); to pin by hand, give the reference with its digest.
  - A reference that already has a digest is kept as given and not recorded.
  - Within one C(ansible-playbook) run, the record is read once per cluster. A later task whose images are all in
    what an earlier task of the run found there is answered by the action plugin, without a module run or an API
    call (the platform roles pin their images one after another).
  - Logs in as each registry asks. For C(Bearer) (public.ecr.aws, quay.io, Docker Hub), an anonymous token from the
    challenge's realm. For C(Basic) (Amazon ECR, such as the EKS add-on registries), the token of ECR's
    GetAuthorizationToken in O(region), asked only then and only for an ECR registry or a host of O(mirrors);
    never returned, never sent to a token realm or after a redirect.
  - O(mirrors) names, per registry host, a registry that holds the same images (a pull-through cache, an air-gapped
    copy), where the digest is read; the reference keeps its registry's name.
  - Check mode reads the registries and the record and writes nothing (it reports a change when it would record).
author:
  - trainium.eks developers (@trainium-eks)
options:
  images:
    description:
      - Image references, such as C(public.ecr.aws/neuron/neuron-device-plugin:2.31.0.0). Duplicates are asked once.
    type: list
    elements: str
    required: true
  mirrors:
    description:
      - Per registry host, where its images are read instead, as C(host[:port][/path prefix]), for example
        C({"public.ecr.aws"="123456789012.dkr.ecr.us-west-2.amazonaws.com/ecr-public"}).
      - The key C(*) names a mirror of every other registry that holds each under its host's name
        (C(<mirror>/<registry host>/<repository>)).
    type: dict
    default: {}
  registry_ca_dir:
    description:
      - A directory with CA certificates (C(*.crt)) for registries or mirrors with a private CA; unset, the system's CAs.
    type: path
  kubeconfig:
    description:
      - The kubeconfig of the cluster that holds the record; unset, C(K8S_AUTH_KUBECONFIG), C(KUBECONFIG) or C(~/.kube/config).
    type: path
  record_namespace:
    description: The namespace of the record.
    type: str
    default: kube-system
  record_name:
    description: The ConfigMap that records the digests.
    type: str
    default: trainium-eks-image-digests
  record_labels:
    description:
      - Labels of the ConfigMap (set when it is written), besides C(app.kubernetes.io/managed-by=trainium.eks) and
        C(app.kubernetes.io/part-of=trainium-eks), which it always has.
    type: dict
    default: {}
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Pin the Neuron device plugin's image by digest
  trainium.eks.image_digest:
    images:
      - public.ecr.aws/neuron/neuron-device-plugin:2.31.0.0
    kubeconfig: ~/.kube/trn-prod.yaml
    region: us-west-2
  register: pinned

- name: Use it
  ansible.builtin.debug:
    msg: "{{ pinned.images['public.ecr.aws/neuron/neuron-device-plugin:2.31.0.0'] }}"
"""

RETURN = r"""
images:
  description: Each given reference, mapped to the reference to run (C(name:tag@sha256:...)).
  returned: always
  type: dict
  sample: {"quay.io/coreos/etcd:v3.5.34": "quay.io/coreos/etcd:v3.5.34@sha256:0123abcd..."}
resolved:
  description: The references whose digest was asked of a registry in this run (not found in the record).
  returned: always
  type: list
  elements: str
recorded:
  description:
    - Every reference the record holds after the task, mapped to its digest (in check mode, what it held before).
    - The action plugin keeps it for the rest of the run (fact C(_trainium_image_digest_records)) and answers a later
      task whose images are all recorded from it, without running the module.
  returned: success
  type: dict
  sample: {"quay.io/coreos/etcd:v3.5.34": "sha256:0123abcd..."}
msg:
  description: What the task did or, in check mode, would do.
  returned: always
  type: str
"""

import json
import re

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils import trainium_image as ti
from ansible_collections.trainium.eks.plugins.module_utils import trainium_image_digest as tid
from ansible_collections.trainium.eks.plugins.module_utils import trainium_kube as kube

RECORD_KEY = "images.json"
RECORD_LABELS = {"app.kubernetes.io/managed-by": "trainium.eks", "app.kubernetes.io/part-of": "trainium-eks"}
# A record written by two roles at once: read, merge, write again.
WRITE_ATTEMPTS = 5


class Record:
    """The ConfigMap that records the digests."""

    def __init__(self, api, namespace, name, labels):
        from kubernetes import client as kube_client

        self.core = kube_client.CoreV1Api(api)
        self.namespace, self.name, self.labels = namespace, name, labels

    def read(self):
        """(digests, resourceVersion or None when there is no record)."""
        found = kube.call_json(f"read ConfigMap {self.namespace}/{self.name}", self.core.read_namespaced_config_map,
                               self.name, self.namespace, missing_ok=True)
        if not found:
            return {}, None
        try:
            digests = json.loads((found.get("data") or {}).get(RECORD_KEY) or "{}")
        except ValueError:
            digests = {}
        return (digests if isinstance(digests, dict) else {}), found["metadata"]["resourceVersion"]

    def write(self, digests, version):
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": self.namespace, "labels": self.labels},
                "data": {RECORD_KEY: json.dumps(digests, indent=1, sort_keys=True) + "\n"}}
        if version is None:
            return kube.call_json("create the digest record", self.core.create_namespaced_config_map, self.namespace, body)
        body["metadata"]["resourceVersion"] = version
        return kube.call_json("update the digest record", self.core.replace_namespaced_config_map, self.name, self.namespace, body)


# An Amazon ECR registry host: <account>.dkr.ecr[-fips].<region>.amazonaws.com(.cn), or .amazonaws.eu.
ECR_HOST_RE = re.compile(r"^[0-9]{12}\.dkr\.ecr(-fips)?\.[a-z0-9-]+\.amazonaws\.(com|com\.cn|eu)$")


def ecr_login(module, mirror_hosts):
    """(user, password) of ECR's GetAuthorizationToken, asked once, masked in any output; only for an ECR registry
    or a mirror the task names (which then holds the images in place of ECR), never for another registry."""
    cache = {}

    def login(host):
        if not (ECR_HOST_RE.match(host) or host in mirror_hosts):
            return None
        if "login" not in cache:
            cache["login"] = ti.ecr_login(module, purpose=f"{host} asks for a basic login: ")
        return cache["login"]

    return login


def run(module):
    params = module.params
    references = list(dict.fromkeys(params["images"]))
    try:
        for reference in references:
            tid.parse_reference(reference)
    except tid.DigestError as e:
        module.fail_json(msg=f"images: {e}")
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg="the kubernetes Python package is required (pip install kubernetes)")
    mirror_hosts = {str(m).split("://", 1)[-1].split("/", 1)[0] for m in params["mirrors"].values()}
    try:
        ca_path = ti.ca_bundle(params["registry_ca_dir"], module.tmpdir) if params["registry_ca_dir"] else None
    except ti.ImageError as e:
        module.fail_json(msg=str(e))
    resolver = tid.Resolver(mirrors=params["mirrors"], ca_path=ca_path, basic_login=ecr_login(module, mirror_hosts))
    try:
        record = Record(kube.api_client(params["kubeconfig"]), params["record_namespace"], params["record_name"],
                        dict(params["record_labels"], **RECORD_LABELS))
        for _attempt in range(WRITE_ATTEMPTS):
            recorded, version = record.read()
            images, digests, asked = tid.pin_all(references, recorded, resolver)
            if not asked or module.check_mode:
                break
            try:
                record.write(digests, version)
                break
            except kube.KubeError as e:
                if "409" not in str(e):
                    raise
        else:
            module.fail_json(msg=f"the digest record {params['record_namespace']}/{params['record_name']} kept changing under this task")
    except tid.DigestError as e:
        module.fail_json(msg=f"could not pin an image by digest: {e}")
    except (kube.KubeError, *kube.CONNECTION_ERRORS) as e:
        module.fail_json(msg=f"the digest record {params['record_namespace']}/{params['record_name']}: {e}")
    if asked:
        verb = "would record" if module.check_mode else "recorded"
        msg = f"{verb} {len(asked)} digest(s) read from their registries: " + ", ".join(images[r] for r in asked)
    else:
        msg = f"{len(images)} image(s) pinned by their recorded digests"
    # What the cluster's record holds now (in check mode: what it held): the action plugin answers later tasks of
    # the run from it.
    holds = digests if asked and not module.check_mode else dict(recorded or {})
    module.exit_json(changed=bool(asked), images=images, resolved=asked, recorded=holds, msg=msg)


def main():
    argument_spec = dict(
        images=dict(type="list", elements="str", required=True),
        mirrors=dict(type="dict", default={}),
        registry_ca_dir=dict(type="path"),
        kubeconfig=dict(type="path"),
        record_namespace=dict(type="str", default="kube-system"),
        record_name=dict(type="str", default="trainium-eks-image-digests"),
        record_labels=dict(type="dict", default={}),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    run(module)


if __name__ == "__main__":
    main()
