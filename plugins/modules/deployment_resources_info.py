#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: deployment_resources_info
short_description: List what of one deployment exists in the account (nothing, after a teardown)
version_added: 0.5.0
description:
  - Lists, by kind, the resources of the deployment O(cluster_name) in the region - everything that carries the
    ownership tag C(trainium.eks/cluster=<cluster_name>) that the collection puts on what it creates (VPC, subnets,
    security groups, gateways, route tables, Elastic IPs, launch templates, placement groups, network interfaces,
    instances (also by EKS's tag C(eks:cluster-name)), FSx file
    systems and backups, the OIDC provider), the collection's IAM roles of the cluster (by name, with the tag), the
    EKS cluster of that name, the cluster's KMS alias, its log groups and the O(ecr_repositories) that exist.
  - What AWS shows for a while after a deletion is not listed - a NAT gateway C(deleted), an instance
    C(terminated), a KMS key pending deletion.
  - The acceptance run (C(playbooks/aws_acceptance.yml)) reads it after the teardown; RV(empty) must be true.
author:
  - trainium.eks developers (@trainium-eks)
options:
  cluster_name:
    description:
      - The deployment's cluster name (C(trainium_cluster_name)).
    type: str
    required: true
  ecr_repositories:
    description:
      - ECR repositories to look at (ECR cannot be searched by tag); listed when they exist.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: List what of the deployment is left
  trainium.eks.deployment_resources_info:
    cluster_name: trn-bert
    ecr_repositories: [bert-pretrain-neuron]
  register: left

- name: Nothing is left
  ansible.builtin.assert:
    that: left.empty
    fail_msg: "left in the account: {{ left.summary }}"
"""

RETURN = r"""
resources:
  description: By kind, the IDs or names found (an empty list for a kind with none).
  returned: always
  type: dict
  sample: {"eks_clusters": [], "vpcs": ["vpc-0123456789abcdef0"], "iam_roles": ["trn-bert-node"]}
empty:
  description: Whether nothing of the deployment was found.
  returned: always
  type: bool
  sample: false
summary:
  description: One line, the kinds found with their IDs, or V(nothing).
  returned: always
  type: str
  sample: "vpcs: vpc-0123456789abcdef0; iam_roles: trn-bert-node"
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils.trainium_leftovers import deployment_resources

try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:
    pass  # handled by AnsibleAWSModule


def main():
    module = AnsibleAWSModule(
        argument_spec=dict(
            cluster_name=dict(type="str", required=True),
            ecr_repositories=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    clients = {}

    def client(service):
        if service not in clients:
            clients[service] = module.client(service)
        return clients[service]

    try:
        found = deployment_resources(client, module.params["cluster_name"], module.params["ecr_repositories"])
    except (BotoCoreError, ClientError) as e:
        module.fail_json_aws(e, msg=f"Failed to list the resources of deployment {module.params['cluster_name']}")
    left = {kind: ids for kind, ids in found.items() if ids}
    summary = "; ".join(f"{kind}: {', '.join(ids)}" for kind, ids in left.items()) or "nothing"
    module.exit_json(changed=False, resources=found, empty=not left, summary=summary)


if __name__ == "__main__":
    main()
