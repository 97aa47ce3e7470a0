#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: account_resources_info
short_description: Read IAM roles, KMS keys, log groups and EKS add-ons in one call and say which are already in place
version_added: 0.4.0
description:
  - Reads the IAM roles, the KMS keys (by alias) and the CloudWatch log groups
    given, and compares each with the options a role would give
    M(amazon.aws.iam_role), M(amazon.aws.kms_key) and
    M(amazon.aws.cloudwatchlogs_log_group) for it, and the EKS add-ons with
    what M(trainium.eks.eks_addon) would be given.
  - A resource whose RV(iam_roles) (or RV(kms_keys), RV(log_groups)) entry
    says C(in_place=true) exists with that trust policy, description,
    attached managed policies, state, key rotation, key policy, retention and tags, so
    the task that would create or update it can be skipped. Otherwise
    RV(differences) says, one sentence each, what is missing or different.
  - The comparison is strict. A trust policy must be the same JSON once its
    keys are sorted, and tags and attached policies must be exactly those
    given. When in doubt it reports a difference and the module that owns
    the resource runs.
  - A trust policy may hold C(${oidc_provider_arn}) and C(${oidc_host}); they
    are filled in from the OIDC issuer of the EKS cluster O(oidc_cluster_name)
    (an IRSA role). Without that cluster or its issuer such a role is not in
    place.
  - Reads only; it never changes anything and runs the same in check mode.
  - The trainium.eks.eks_cluster role calls it first, so that a rerun on a
    converged cluster makes one call instead of five.
author:
  - trainium.eks developers (@trainium-eks)
options:
  iam_roles:
    description:
      - IAM roles, each with what M(amazon.aws.iam_role) would be given for it
        (with C(purge_policies=true) and C(purge_tags=true)).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description:
          - Name of the role; the key of RV(iam_roles).
        type: str
        required: true
      description:
        description:
          - Description of the role; not compared when omitted.
        type: str
      assume_role_policy_document:
        description:
          - Trust policy of the role.
        type: dict
        required: true
      managed_policies:
        description:
          - ARNs of the managed policies attached to the role, no more, no fewer.
        type: list
        elements: str
        default: []
      tags:
        description:
          - Tags of the role, no more, no fewer (keys starting with C(aws:) aside).
        type: dict
        default: {}
  oidc_cluster_name:
    description:
      - EKS cluster whose OIDC issuer fills in the placeholders of the trust policies.
    type: str
  kms_keys:
    description:
      - KMS keys, each found by its alias, with what M(amazon.aws.kms_key)
        would be given for it (with C(purge_tags=true)).
    type: list
    elements: dict
    default: []
    suboptions:
      alias:
        description:
          - Alias of the key, with or without the C(alias/) prefix; the key of RV(kms_keys).
        type: str
        required: true
      description:
        description:
          - Description of the key; not compared when omitted.
        type: str
      enabled:
        description:
          - Whether the key must be enabled (C(KeyState=Enabled)) or disabled.
        type: bool
        default: true
      enable_key_rotation:
        description:
          - Whether automatic key rotation must be on; not compared when omitted.
        type: bool
      policy:
        description:
          - The key policy (its policy named C(default)), compared as M(amazon.aws.kms_key) compares it (order
            of statements, lists and keys aside); not compared when omitted. A policy that cannot be read counts
            as a difference.
        type: dict
      tags:
        description:
          - Tags of the key, no more, no fewer (keys starting with C(aws:) aside).
        type: dict
        default: {}
  log_groups:
    description:
      - CloudWatch log groups, each with what M(amazon.aws.cloudwatchlogs_log_group)
        would be given for it (with C(purge_tags=true)).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description:
          - Name of the log group; the key of RV(log_groups).
        type: str
        required: true
      retention:
        description:
          - Days the events are kept; not compared when omitted.
        type: int
      tags:
        description:
          - Tags of the log group, no more, no fewer (keys starting with C(aws:) aside).
        type: dict
        default: {}
  eks_addons:
    description:
      - EKS add-ons, each with what M(trainium.eks.eks_addon) would be given
        for it (with C(purge_tags=true)), compared by that module's own
        planner. An add-on is in place only when it is C(ACTIVE).
    type: list
    elements: dict
    default: []
    suboptions:
      cluster_name:
        description:
          - Cluster of the add-on.
        type: str
        required: true
      name:
        description:
          - Name of the add-on, for example V(vpc-cni); the key of RV(eks_addons).
        type: str
        required: true
      addon_version:
        description:
          - Version the add-on must run; not compared when omitted.
        type: str
      service_account_role:
        description:
          - Name of an entry of O(iam_roles) whose ARN the add-on's service
            account must use; while that role is not in place, neither is the add-on.
          - Mutually exclusive with O(eks_addons[].service_account_role_arn).
        type: str
      service_account_role_arn:
        description:
          - ARN of the IAM role the add-on's service account must use; not compared when omitted.
        type: str
      configuration_values:
        description:
          - Configuration of the add-on (a mapping, or its JSON or YAML text); not compared when omitted.
        type: raw
      tags:
        description:
          - Tags of the add-on, no more, no fewer.
        type: dict
        default: {}
notes:
  - AWS permissions used, all reads - C(eks:DescribeCluster) (with
    O(oidc_cluster_name)), C(eks:DescribeAddon) (with O(eks_addons)), C(iam:GetRole), C(iam:ListAttachedRolePolicies),
    C(kms:ListAliases), C(kms:DescribeKey), C(kms:GetKeyRotationStatus),
    C(kms:ListResourceTags), C(kms:GetKeyPolicy) (with O(kms_keys[].policy)), C(logs:DescribeLogGroups) and
    C(logs:ListTagsLogGroup).
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Read the control plane role and the log group in one call
  trainium.eks.account_resources_info:
    iam_roles:
      - name: trn-prod-cluster
        assume_role_policy_document:
          Version: "2012-10-17"
          Statement:
            - Effect: Allow
              Principal:
                Service: eks.amazonaws.com
              Action: sts:AssumeRole
        managed_policies: [arn:aws:iam::aws:policy/AmazonEKSClusterPolicy]
        tags: {trainium.eks/cluster: trn-prod}
    log_groups:
      - name: /aws/eks/trn-prod/cluster
        retention: 90
        tags: {trainium.eks/cluster: trn-prod}
  register: found

- name: Create the role only when it is not in place
  amazon.aws.iam_role:
    name: trn-prod-cluster
    # ...
  when: not found.iam_roles['trn-prod-cluster'].in_place
"""

RETURN = r"""
in_place:
  description: Whether every resource given is in place.
  returned: always
  type: bool
  sample: false
differences:
  description: One sentence per resource missing or different.
  returned: always
  type: list
  elements: str
  sample: ["log group /aws/eks/trn-prod/cluster: retention is 30 days, not 90"]
iam_roles:
  description: By role name, its ARN (null when it does not exist) and whether it is in place.
  returned: always
  type: dict
  sample: {"trn-prod-cluster": {"arn": "arn:aws:iam::123456789012:role/trn-prod-cluster", "in_place": true}}
kms_keys:
  description: By alias as given, the key's ARN and ID (null when there is no such alias) and whether it is in place.
  returned: always
  type: dict
  sample: {"alias/trn-prod-eks-secrets": {"key_arn": "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
                                          "key_id": "1234abcd-12ab-34cd-56ef-1234567890ab", "in_place": true}}
log_groups:
  description: By name, the log group's ARN (null when it does not exist) and whether it is in place.
  returned: always
  type: dict
  sample: {"/aws/eks/trn-prod/cluster": {"arn": "arn:aws:logs:us-west-2:123456789012:log-group:/aws/eks/trn-prod/cluster:*", "in_place": true}}
eks_addons:
  description: By add-on name, its ARN and status (null when it does not exist) and whether it is in place.
  returned: always
  type: dict
  sample: {"vpc-cni": {"arn": "arn:aws:eks:us-west-2:123456789012:addon/trn-prod/vpc-cni/0123", "status": "ACTIVE", "in_place": true}}
oidc_provider_arn:
  description: ARN of the OIDC provider of O(oidc_cluster_name)'s issuer; null without that cluster, its issuer or the option.
  returned: always
  type: str
  sample: arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/0123456789ABCDEF
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils.trainium_account import read_account_resources
from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import fail_on_aws_error


def main():
    argument_spec = dict(
        iam_roles=dict(type="list", elements="dict", default=[], options=dict(
            name=dict(type="str", required=True),
            description=dict(type="str"),
            assume_role_policy_document=dict(type="dict", required=True),
            managed_policies=dict(type="list", elements="str", default=[]),
            tags=dict(type="dict", default={}),
        )),
        oidc_cluster_name=dict(type="str"),
        kms_keys=dict(type="list", elements="dict", default=[], no_log=False, options=dict(
            alias=dict(type="str", required=True),
            description=dict(type="str"),
            enabled=dict(type="bool", default=True),
            enable_key_rotation=dict(type="bool", no_log=False),
            policy=dict(type="dict"),
            tags=dict(type="dict", default={}),
        )),
        log_groups=dict(type="list", elements="dict", default=[], options=dict(
            name=dict(type="str", required=True),
            retention=dict(type="int"),
            tags=dict(type="dict", default={}),
        )),
        eks_addons=dict(type="list", elements="dict", default=[], options=dict(
            cluster_name=dict(type="str", required=True),
            name=dict(type="str", required=True),
            addon_version=dict(type="str"),
            service_account_role=dict(type="str"),
            service_account_role_arn=dict(type="str"),
            configuration_values=dict(type="raw"),
            tags=dict(type="dict", default={}),
        ), mutually_exclusive=[("service_account_role", "service_account_role_arn")]),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    roles = [role["name"] for role in module.params["iam_roles"]]
    for addon in module.params["eks_addons"]:
        if addon["service_account_role"] and addon["service_account_role"] not in roles:
            module.fail_json(msg=f"eks_addons[].service_account_role: got {addon['service_account_role']!r} (str); "
                                 f"allowed: the name of an entry of iam_roles ({', '.join(roles) or 'none given'})")
    clients = {}

    def client(service):
        if service not in clients:
            clients[service] = module.client(service)
        return clients[service]

    result = fail_on_aws_error(module, read_account_resources, client, module.params)
    if result is not None:
        module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
