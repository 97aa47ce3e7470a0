# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The options that name an ECR repository (ecr_repository, ecr_repository_tags).
    DOCUMENTATION = r"""
options:
  name:
    description:
      - Name of the repository, for example V(bert-pretrain-neuron).
    type: str
    required: true
  registry_id:
    description:
      - Account ID of the registry; the caller's registry when not set.
    type: str
"""
