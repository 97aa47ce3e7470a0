# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The cluster options of the modules that call Kubernetes through module_utils/trainium_kube.py
    # (its api_client: the kubeconfig given, else the environment's, as kubernetes.core).
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of the kubeconfig; the environment's C(K8S_AUTH_KUBECONFIG), C(KUBECONFIG) or
        C(~/.kube/config) when not set.
    type: path
  context:
    description:
      - Context of the kubeconfig; its current context when not set.
    type: str
"""
