# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: eks_token
short_description: Make a bearer token for an Amazon EKS cluster
version_added: 0.2.0
author:
  - trainium.eks developers (@trainium-eks)
description:
  - Returns a C(k8s-aws-v1.) token for the Kubernetes API of an EKS cluster, the
    same token C(aws eks get-token) prints - a presigned STS C(GetCallerIdentity)
    URL, signed with the caller's AWS credentials, that names the cluster in the
    signed header C(x-k8s-aws-id).
  - Made locally with botocore; no AWS call is made and no AWS CLI is needed.
    The token is valid for about 15 minutes; make a new one per play.
  - The token is a secret - use it in tasks with C(no_log=true).
options:
  _terms:
    description: Cluster names; each gives one token. Alternative to O(cluster_name).
    required: false
  cluster_name:
    description: Name of the EKS cluster.
    type: str
extends_documentation_fragment:
  - amazon.aws.boto3
  - amazon.aws.common.plugins
  - amazon.aws.region.plugins
notes:
  - O(endpoint_url) is the STS endpoint the token is presigned for; by default the region's STS endpoint.
"""

EXAMPLES = r"""
- name: List the nodes of a cluster with a token, without a kubeconfig
  kubernetes.core.k8s_info:
    host: "{{ eks_cluster_facts.endpoint }}"
    ca_cert: /tmp/trn-rehearsal-ca.crt
    api_key: "{{ lookup('trainium.eks.eks_token', cluster_name='trn-rehearsal', region='us-west-2') }}"
    kind: Node
  no_log: true
  register: nodes

- name: A token from a named profile
  ansible.builtin.set_fact:
    trn_token: "{{ lookup('trainium.eks.eks_token', 'trn-rehearsal', region='us-west-2', profile='training') }}"
  no_log: true
"""

RETURN = r"""
_raw:
  description: One token per cluster name, C(k8s-aws-v1.) followed by the base64url of the presigned URL.
  type: list
  elements: str
"""

try:
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError
except ImportError:
    pass  # Handled by AWSLookupBase

from ansible.errors import AnsibleLookupError

from ansible_collections.amazon.aws.plugins.plugin_utils.lookup import AWSLookupBase

from ansible_collections.trainium.eks.plugins.module_utils.trainium_eks_token import make_token


class LookupModule(AWSLookupBase):
    def run(self, terms, variables=None, **kwargs):
        super().run(terms, variables, **kwargs)
        names = list(terms or [])
        if self.get_option("cluster_name"):
            names.append(self.get_option("cluster_name"))
        if not names:
            raise AnsibleLookupError("cluster_name: got nothing; allowed: the name of an EKS cluster, as cluster_name= or a term")
        if not self.region:
            raise AnsibleLookupError("region: got nothing; allowed: the AWS region of the cluster (region= or AWS_REGION)")
        # The region's own STS endpoint (botocore's default) or endpoint_url.
        client = self.client("sts")
        tokens = []
        for name in names:
            try:
                tokens.append(make_token(client, name)["token"])
            except (BotoCoreError, ClientError, ValueError) as e:
                raise AnsibleLookupError(f"cannot make an EKS token for cluster {name}: {e}") from e
        return tokens
