#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: eks_kubeconfig
short_description: Write (or remove) the kubeconfig of an EKS cluster and its token helper, in one call
version_added: 0.4.0
description:
  - Writes a kubeconfig (mode C(0600)) for one EKS cluster that holds no token -
    its user runs an exec credential plugin, a Python token helper written
    next to it (mode C(0644)), which signs a fresh EKS bearer token with the
    caller's AWS credentials each time kubectl or a client needs one.
  - The helper is named after the cluster (V(<cluster>-eks-token.py)), so that
    removing one cluster's kubeconfig never breaks another's.
  - The kubeconfig runs the helper with O(python), by default V(python3) as kubectl finds it on
    C(PATH) when it needs a token, not the interpreter that ran Ansible, so that
    rebuilding or moving a virtualenv does not break it. The helper signs with botocore when that
    Python has it, runs C(aws eks get-token) when it has not and the AWS CLI is on C(PATH), and
    otherwise fails with a message saying what to install.
  - Creates the directory (mode C(0700)) when it is missing. Writes only what
    differs; a second run reports no change.
  - With O(state=absent), removes the kubeconfig and the helper.
  - Makes no AWS call; the cluster's endpoint and CA come from
    M(trainium.eks.eks_cluster).
author:
  - trainium.eks developers (@trainium-eks)
options:
  path:
    description:
      - Path of the kubeconfig; C(~) is expanded.
    type: path
    required: true
  state:
    description:
      - V(present) writes the files, V(absent) removes them.
    type: str
    choices: [present, absent]
    default: present
  cluster_name:
    description:
      - Name of the EKS cluster; also the context name.
    type: str
    required: true
  cluster_arn:
    description:
      - ARN of the cluster, the name of the kubeconfig's cluster and user entries.
      - Required with O(state=present).
    type: str
  endpoint:
    description:
      - API server endpoint (C(https://...)). Required with O(state=present).
    type: str
  certificate_authority:
    description:
      - Base64 CA bundle of the cluster. Required with O(state=present).
    type: str
  region:
    description:
      - Region the helper signs the token for. Required with O(state=present).
    type: str
  endpoint_url:
    description:
      - STS endpoint the helper signs for, when not the AWS default.
    type: str
  aws_profile:
    description:
      - AWS profile the helper reads credentials from.
    type: str
  python:
    description:
      - The command that runs the helper, written into the kubeconfig as the exec plugin's C(command).
      - V(python3) (the default) is looked up on C(PATH) each time a token is needed.
        An absolute path (for example a virtualenv's C(bin/python)) works only as long as that interpreter exists there.
    type: str
    default: python3
  helper_source:
    description:
      - The helper's source, the collection's C(plugins/module_utils/trainium_eks_token.py).
        Required with O(state=present).
    type: str
notes:
  - Supports check mode and diff mode (the kubeconfig's text).
  - Refuses to overwrite a file it did not write (for example C(~/.kube/config) with other contexts) and
    a directory that others may write to; O(state=absent) leaves such a file alone.
"""

EXAMPLES = r"""
- name: Write the kubeconfig of trn-prod
  trainium.eks.eks_kubeconfig:
    path: ~/.kube/trn-prod.yaml
    cluster_name: trn-prod
    cluster_arn: "{{ eks_cluster_facts.arn }}"
    endpoint: "{{ eks_cluster_facts.endpoint }}"
    certificate_authority: "{{ eks_cluster_facts.certificate_authority }}"
    region: us-west-2
    helper_source: "{{ lookup('ansible.builtin.file', 'trainium_eks_token.py') }}"
"""

RETURN = r"""
path:
  description: Absolute path of the kubeconfig.
  returned: always
  type: str
  sample: /home/me/.kube/trn-prod.yaml
helper_path:
  description: Absolute path of the token helper.
  returned: always
  type: str
  sample: /home/me/.kube/trn-prod-eks-token.py
written:
  description: The files the task wrote or removed (would have, in check mode).
  returned: always
  type: list
  elements: str
"""

import json
import os
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule

HEADER = """\
# EKS cluster {name}, written by trainium.eks. No token is stored here:
# kubectl and the Kubernetes clients run {helper} for a fresh EKS
# bearer token signed with your AWS credentials.
"""
INSTALL_HINT = (
    "trainium.eks: this kubeconfig runs its EKS token helper with {python}, which was not found. Put a Python 3 on PATH "
    "(with botocore, or next to the AWS CLI), or write the kubeconfig again with another eks_cluster_kubeconfig_python."
)


def _quoted(value):
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(value)


def kubeconfig_text(params, helper_path):
    """The kubeconfig's text: hand-laid YAML so that it reads like kubectl's own."""
    arn = _quoted(params["cluster_arn"])
    name = _quoted(params["cluster_name"])
    args = [helper_path, "--cluster-name", params["cluster_name"], "--region", params["region"]]
    if params["endpoint_url"]:
        args += ["--endpoint-url", params["endpoint_url"]]
    if params["aws_profile"]:
        args += ["--profile", params["aws_profile"]]
    lines = [
        HEADER.format(name=params["cluster_name"], helper=os.path.basename(helper_path)).rstrip("\n"),
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        f"  - name: {arn}",
        "    cluster:",
        f"      server: {_quoted(params['endpoint'])}",
        f"      certificate-authority-data: {_quoted(params['certificate_authority'])}",
        "contexts:",
        f"  - name: {name}",
        "    context:",
        f"      cluster: {arn}",
        f"      user: {arn}",
        f"current-context: {name}",
        "preferences: {}",
        "users:",
        f"  - name: {arn}",
        "    user:",
        "      exec:",
        "        apiVersion: client.authentication.k8s.io/v1beta1",
        f"        command: {_quoted(params['python'])}",
        "        args:",
    ]
    lines += [f"          - {_quoted(arg)}" for arg in args]
    lines += ["        interactiveMode: Never", "        provideClusterInfo: false",
              f"        installHint: {_quoted(INSTALL_HINT.format(python=params['python']))}"]
    return "\n".join(lines) + "\n"


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _mode(path):
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return None


def _write(path, text, mode):
    """Write atomically (a fresh temporary file in the same directory, then rename) with ``mode``."""
    descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".trainium-eks-")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def ours(text):
    """Whether a kubeconfig's text is one trainium.eks wrote: this module's header, or the 0.3.0 template's."""
    head = "\n".join(text.splitlines()[:4])
    return "# EKS cluster " in head and "No token is stored here" in head


def present(module, path, helper_path):
    params = module.params
    missing = [option for option in ("cluster_arn", "endpoint", "certificate_authority", "region", "python", "helper_source")
               if not params[option]]
    if missing:
        module.fail_json(msg=f"{', '.join(missing)}: required with state=present; allowed: non-empty strings "
                             "(the cluster's facts from trainium.eks.eks_cluster)")
        return
    directory = os.path.dirname(path)
    text = kubeconfig_text(params, helper_path)
    helper = params["helper_source"].rstrip("\n") + "\n"
    before = _read(path)
    if before is not None and not ours(before):
        module.fail_json(msg=f"path: got {path}, a kubeconfig trainium.eks did not write (for example ~/.kube/config with other "
                             "contexts); allowed: a file of its own such as ~/.kube/<cluster>.yaml (merge it with KUBECONFIG=a:b)")
        return
    if os.path.isdir(directory) and os.stat(directory).st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        module.fail_json(msg=f"path: got {path}, in a directory others may write to ({directory}); allowed: a directory only "
                             "you can write to, since kubectl runs the token helper written there")
        return
    wanted = [(directory, None, 0o700), (helper_path, helper, 0o644), (path, text, 0o600)]
    written = []
    for target, content, mode in wanted:
        if content is None:
            if not os.path.isdir(target):
                written.append(target)
                if not module.check_mode:
                    os.makedirs(target, mode=mode, exist_ok=True)
            continue
        if _read(target) != content or _mode(target) != mode:
            written.append(target)
            if not module.check_mode:
                _write(target, content, mode)
    result = dict(changed=bool(written), path=path, helper_path=helper_path, written=written)
    if module._diff:
        result["diff"] = {"before": before or "", "after": text, "before_header": path, "after_header": path}
    module.exit_json(**result)


def absent(module, path, helper_path):
    before = _read(path) or ""
    if before and not ours(before):
        # Not ours (another tool's kubeconfig at that path): leave it, remove only our helper.
        path_is_ours = False
    else:
        path_is_ours = True
    written = [target for target in ((path,) if path_is_ours else ()) + (helper_path,) if os.path.lexists(target)]
    if not module.check_mode:
        for target in written:
            os.unlink(target)
    result = dict(changed=bool(written), path=path, helper_path=helper_path, written=written)
    if module._diff:
        result["diff"] = {"before": before, "after": "", "before_header": path, "after_header": path}
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            cluster_name=dict(type="str", required=True),
            cluster_arn=dict(type="str"),
            endpoint=dict(type="str"),
            certificate_authority=dict(type="str"),
            region=dict(type="str"),
            endpoint_url=dict(type="str"),
            aws_profile=dict(type="str"),
            python=dict(type="str", default="python3"),
            helper_source=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    path = os.path.abspath(module.params["path"])
    helper_path = os.path.join(os.path.dirname(path), f"{module.params['cluster_name']}-eks-token.py")
    if module.params["state"] == "present":
        present(module, path, helper_path)
    else:
        absent(module, path, helper_path)


if __name__ == "__main__":
    main()
