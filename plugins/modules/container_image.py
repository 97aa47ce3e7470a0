#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_image
short_description: Build a container image under a content-addressed tag and push it to ECR, unless the tag exists
version_added: 0.4.0
description:
  - Computes the tag C(<tag_prefix>-<hash>) of a build context, where the hash is the first 12 hex digits of a
    sha256 over the context's files (sorted relative paths, contents and modes) and the build arguments.
  - Gets a registry login from ECR's GetAuthorizationToken and asks the registry (registry v2
    C(HEAD /v2/<repository>/manifests/<tag>)) whether the tag exists. When it does, nothing is built or pushed
    and the task reports no change.
  - Otherwise builds the image with buildah, podman or docker (RUN steps execute), pushes it, and reads its
    digest back from the registry.
  - The login goes into a temporary auth file (mode 0600, removed afterwards) given to the builder with
    C(--authfile) (C(--config) for docker); it is never on a command line and never returned.
  - Check mode computes the tag and checks the registry, and says what it would build; it builds nothing.
author:
  - trainium.eks developers (@trainium-eks)
options:
  context_dir:
    description:
      - The rendered build context (a directory on the host that runs the module).
    type: path
    required: true
  containerfile:
    description:
      - The Containerfile, relative to O(context_dir) or absolute. A file outside the context counts in the hash too.
    type: str
    default: Containerfile
  repository_uri:
    description:
      - The repository to push to, as ECR's C(repositoryUri) gives it (C(<registry>/<name>)), for example the
        C(ecr_facts.repository_uri) of the trainium.eks.ecr role.
    type: str
    required: true
  tag_prefix:
    description:
      - The part of the tag before the content hash, such as C(trainium_image.tag). Empty gives the hash alone.
    type: str
    default: ""
  builder:
    description:
      - The image builder. V(auto) takes the first of buildah, podman and docker found on PATH.
    type: str
    choices: [auto, buildah, podman, docker]
    default: auto
  builder_options:
    description:
      - Global options put before the builder's subcommand, such as C(["--root", "/srv/buildah", "--storage-driver", "vfs"]).
    type: list
    elements: str
    default: []
  isolation:
    description:
      - buildah and podman C(--isolation) of RUN steps (C(chroot), C(rootless), C(oci)); unset leaves the builder's default.
    type: str
  registry_ca_dir:
    description:
      - A directory with the registry's CA certificate(s) as C(*.crt), for a registry with a private CA. Given to
        buildah and podman as C(--cert-dir) and used for the manifest check. Docker reads its CAs from
        C(/etc/docker/certs.d/<registry>/) instead.
    type: path
  build_args:
    description:
      - Build arguments (C(--build-arg KEY=VALUE)); they count in the tag's hash. Never put secrets here.
    type: dict
    default: {}
  push:
    description:
      - Push the image after building it. V(false) builds only (and reports C(pushed=false)).
    type: bool
    default: true
  keep_local:
    description:
      - Keep the built image in the builder's local storage after the push. V(false) removes the local tag
        (the base image stays cached).
    type: bool
    default: false
  timeout:
    description:
      - Seconds the build and the push may take, each.
    type: int
    default: 3600
notes:
  - Needs C(ecr:GetAuthorizationToken), and for the push C(ecr:BatchCheckLayerAvailability), C(ecr:InitiateLayerUpload),
    C(ecr:UploadLayerPart), C(ecr:CompleteLayerUpload), C(ecr:PutImage), C(ecr:BatchGetImage).
  - Supports check mode.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Build and push the training image (nothing happens when its content-addressed tag exists)
  trainium.eks.container_image:
    context_dir: ~/.cache/trainium-eks/build/trn-demo/bert-pretrain-neuron
    repository_uri: "{{ ecr_facts.repository_uri }}"
    tag_prefix: "0.1.0"
    builder: auto
  register: training_image

- name: The same with buildah storage of its own and a registry with a private CA
  trainium.eks.container_image:
    context_dir: /srv/build/bert
    repository_uri: 127.0.0.1:5050/bert-pretrain-neuron
    tag_prefix: "0.1.0"
    builder: buildah
    builder_options: [--root, /srv/buildah/root, --runroot, /srv/buildah/runroot, --storage-driver, vfs]
    isolation: chroot
    registry_ca_dir: /srv/registry/certs.d
"""

RETURN = r"""
image:
  description: The image reference with its content-addressed tag.
  returned: always
  type: str
  sample: 123456789012.dkr.ecr.us-west-2.amazonaws.com/bert-pretrain-neuron:0.1.0-3f2a9c1b7e4d
tag:
  description: The content-addressed tag.
  returned: always
  type: str
  sample: 0.1.0-3f2a9c1b7e4d
digest:
  description: The manifest digest the registry reports for the tag; null when it is not there (check mode, push=false).
  returned: always
  type: str
  sample: sha256:0d5c1e...
built:
  description: Whether the image was built by this task.
  returned: always
  type: bool
pushed:
  description: Whether the image was pushed by this task.
  returned: always
  type: bool
exists:
  description: Whether the registry had the tag before the task.
  returned: always
  type: bool
builder:
  description: The builder used (or that would be used), null when the tag existed and none was needed.
  returned: always
  type: str
build_seconds:
  description: Seconds the build took (0 when nothing was built).
  returned: always
  type: float
push_seconds:
  description: Seconds the push took (0 when nothing was pushed).
  returned: always
  type: float
msg:
  description: What the task did or, in check mode, would do.
  returned: always
  type: str
"""

import os
import subprocess
import time

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils import trainium_image as ti


def run(module, args, timeout, what):
    """(rc, combined output) of a builder command, without a shell."""
    started = time.monotonic()
    try:
        completed = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False,
                                   env=dict(os.environ, LC_ALL="C"))
    except subprocess.TimeoutExpired as e:
        module.fail_json(msg=f"{what} took longer than {timeout} s; last lines:\n{ti.last_lines(str(e.output or ''))}")
    return completed.returncode, completed.stdout + completed.stderr, time.monotonic() - started


def build_and_push(module, params, builder, path, image, registry, authfile, containerfile):
    """Build (and push) image with the login in authfile; the result fields."""
    result = {"built": False, "pushed": False, "build_seconds": 0.0, "push_seconds": 0.0, "digest": None}
    cert_dir = params["registry_ca_dir"]
    rc, output, seconds = run(module, ti.build_command(
        builder, path, params["builder_options"], containerfile, params["context_dir"], image,
        build_args=params["build_args"], isolation=params["isolation"], cert_dir=cert_dir, authfile=authfile,
    ), params["timeout"], f"building {image}")
    result["build_seconds"] = round(seconds, 1)
    if rc != 0:
        with open(containerfile, encoding="utf-8") as handle:
            bases = ti.base_images(handle.read())
        if ti.looks_like_pull_failure(output):
            module.fail_json(msg=f"{builder} could not pull the base image {', '.join(bases) or '?'} (rc {rc}); "
                                 f"last lines of its output:\n{ti.last_lines(output)}", builder=builder, image=image)
        module.fail_json(msg=f"{builder} failed to build {image} (rc {rc}); last lines of its output:\n{ti.last_lines(output)}",
                         builder=builder, image=image)
    result["built"] = True
    if not params["push"]:
        return result
    rc, output, seconds = run(module, ti.push_command(
        builder, path, params["builder_options"], image, authfile=authfile, cert_dir=cert_dir,
    ), params["timeout"], f"pushing {image}")
    result["push_seconds"] = round(seconds, 1)
    if rc != 0:
        module.fail_json(msg=f"the registry {registry} refused the push of {image} (rc {rc}); last lines of {builder}'s output:\n"
                             f"{ti.last_lines(output)}", builder=builder, image=image, built=True)
    result["pushed"] = True
    if not params["keep_local"]:
        run(module, ti.remove_command(builder, path, params["builder_options"], image), 300, f"removing the local {image}")
    return result


def plan_and_build(module, params, context_dir, containerfile, registry, repository, tag, login, authfile):
    """The module's result: nothing when the tag exists, else what was (or would be) built and pushed."""
    image = f"{registry}/{repository}:{tag}"
    check = ti.Registry(registry, *login, ca_path=ti.ca_bundle(params["registry_ca_dir"], os.path.dirname(authfile)))
    digest = check.manifest_digest(repository, tag)
    result = {"image": image, "tag": tag, "digest": digest, "exists": digest is not None, "built": False,
              "pushed": False, "builder": None, "build_seconds": 0.0, "push_seconds": 0.0}
    if digest is not None:
        return dict(result, changed=False, msg=f"{image} is in the registry already ({digest}): nothing to build")
    builder, path = ti.detect_builder(params["builder"])
    result["builder"] = builder
    if module.check_mode:
        action = "build and push" if params["push"] else "build"
        return dict(result, changed=True, msg=f"would {action} {image} with {builder} from {context_dir}")
    result.update(build_and_push(module, params, builder, path, image, registry, authfile, containerfile))
    if result["pushed"]:
        result["digest"] = check.manifest_digest(repository, tag)
        if result["digest"] is None:
            module.fail_json(msg=f"{builder} pushed {image}, but the registry does not list the tag", **result)
    done = "built and pushed" if result["pushed"] else "built"
    return dict(result, changed=True, msg=f"{done} {image} with {builder} in {result['build_seconds']} s")


def main():
    argument_spec = dict(
        context_dir=dict(type="path", required=True),
        containerfile=dict(type="str", default="Containerfile"),
        repository_uri=dict(type="str", required=True),
        tag_prefix=dict(type="str", default=""),
        builder=dict(type="str", choices=["auto", *ti.BUILDERS], default="auto"),
        builder_options=dict(type="list", elements="str", default=[]),
        isolation=dict(type="str"),
        registry_ca_dir=dict(type="path"),
        build_args=dict(type="dict", default={}),
        push=dict(type="bool", default=True),
        keep_local=dict(type="bool", default=False),
        timeout=dict(type="int", default=3600),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    context_dir = params["context_dir"]
    if not os.path.isdir(context_dir):
        module.fail_json(msg=f"context_dir: got {context_dir!r}; allowed: the directory of a rendered build context")
    containerfile = params["containerfile"]
    if not os.path.isabs(containerfile):
        containerfile = os.path.join(context_dir, containerfile)
    if not os.path.isfile(containerfile):
        module.fail_json(msg=f"containerfile: {containerfile} does not exist")
    try:
        registry, repository = ti.split_repository_uri(params["repository_uri"])
        inside = os.path.realpath(containerfile).startswith(os.path.realpath(context_dir) + os.sep)
        tag = ti.content_tag(params["tag_prefix"], context_dir, params["build_args"],
                             () if inside else (("containerfile", containerfile),))
        login = ti.ecr_login(module)
        with ti.auth_file(registry, *login) as authfile:
            result = plan_and_build(module, params, context_dir, containerfile, registry, repository, tag, login, authfile)
        module.exit_json(**result)
    except ti.ImageError as e:
        module.fail_json(msg=str(e))


if __name__ == "__main__":
    main()
