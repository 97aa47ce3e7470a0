#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: eks_addon
short_description: Manage Amazon EKS managed add-ons (vpc-cni, coredns, kube-proxy, aws-ebs-csi-driver...)
version_added: 0.4.0
description:
  - Creates, updates and deletes an Amazon EKS managed add-on of a cluster.
  - The reason it exists - the CIS EKS benchmark and the EKS best practices want the VPC CNI's AWS permissions
    (C(AmazonEKS_CNI_Policy)) on an IAM role for the C(aws-node) service account (IRSA), not on the node role;
    the managed add-on C(vpc-cni) with O(service_account_role_arn) is the supported way to do that.
  - A new add-on gets O(addon_version), or when that is unset the version EKS marks as default for the cluster's
    Kubernetes version (C(DescribeAddonVersions)). A version EKS does not offer for that Kubernetes version fails the
    task and lists the versions it offers.
  - On an existing add-on only the options that are set are compared; the version, the service account role and the
    configuration values that differ are changed with one C(UpdateAddon), the tags with C(TagResource) and
    C(UntagResource). EKS refuses an update while the add-on is C(CREATING) or C(UPDATING); the module waits that out
    first (for at most O(wait_timeout)).
  - An add-on that is C(CREATE_FAILED) fails the task with its health issues; one that is C(DEGRADED) or
    C(UPDATE_FAILED) is updated like an active one and its health issues are shown as a warning.
author:
  - trainium.eks developers (@trainium-eks)
options:
  cluster_name:
    description:
      - Name of the EKS cluster.
      - When the cluster does not exist, O(state=absent) reports no change and O(state=present) fails naming the
        cluster (in check mode it reports a change and warns).
    type: str
    required: true
  name:
    description:
      - Name of the add-on as EKS spells it, for example V(vpc-cni), V(coredns), V(kube-proxy) or V(aws-ebs-csi-driver).
      - A name EKS does not offer for the cluster's Kubernetes version fails the task and lists the names it offers.
    type: str
    required: true
    aliases: [addon_name]
  state:
    description:
      - V(present) creates or updates the add-on, V(absent) deletes it.
      - An add-on that is already C(DELETING) counts as absent (no change); with O(wait) the module waits until it is gone.
    type: str
    choices: [present, absent]
    default: present
  addon_version:
    description:
      - Version of the add-on, for example V(v1.20.4-eksbuild.2). It must be one that EKS offers for the cluster's
        Kubernetes version; otherwise the task fails and lists them.
      - Unset creates the add-on with the version EKS marks as default for the cluster's Kubernetes version and is
        not compared afterwards (an existing add-on keeps its version).
    type: str
  service_account_role_arn:
    description:
      - ARN of the IAM role the add-on's Kubernetes service account assumes (IAM roles for service accounts).
        For V(vpc-cni) a role with C(AmazonEKS_CNI_Policy) whose trust policy names the cluster's OIDC provider and
        C(system:serviceaccount:kube-system:aws-node).
      - Unset leaves the add-on's role as it is. EKS cannot take the role off an add-on (C(UpdateAddon) takes a role
        ARN only); to go back to the node role's permissions, delete the add-on and create it again without this option.
    type: str
  configuration_values:
    description:
      - Configuration of the add-on, as a mapping or as JSON or YAML text of one, validated by EKS against the
        add-on's schema (C(DescribeAddonConfiguration)). Compared with the add-on's as data, so key order and
        formatting never cause an update. Sent as JSON.
      - V({}) removes the configuration. Unset leaves it as it is.
    type: raw
  resolve_conflicts:
    description:
      - What EKS does with Kubernetes fields of the add-on that differ from its defaults (changed by hand, or a
        self-managed installation of the same software) - V(OVERWRITE) sets them to the EKS defaults, V(NONE) changes
        nothing (and the creation or update may fail), V(PRESERVE) keeps the changed values during an update.
      - Sent with C(CreateAddon) and C(UpdateAddon) only; it is not a setting of the add-on and is never compared.
        On creation V(PRESERVE) is sent as V(NONE), which the EKS API reference says it amounts to there.
    type: str
    choices: [OVERWRITE, NONE, PRESERVE]
    default: OVERWRITE
  preserve:
    description:
      - With O(state=absent), keep the add-on's Kubernetes objects (the C(aws-node) DaemonSet of V(vpc-cni), for example)
        in the cluster and only stop EKS from managing them. Deleting V(vpc-cni) without it removes pod networking.
    type: bool
    default: false
  wait:
    description:
      - Wait until the add-on is V(ACTIVE) (or gone with O(state=absent)).
      - V(CREATE_FAILED) or V(UPDATE_FAILED) fails the task at once with the health issues. V(DEGRADED) is waited on
        (CoreDNS becomes active once the cluster has nodes); when O(wait_timeout) passes, its health issues are in the message.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait, for O(wait) and for an add-on that is C(CREATING) or C(UPDATING) before an update.
    type: int
    default: 900
notes:
  - Needs C(eks:DescribeCluster), C(eks:DescribeAddon), C(eks:DescribeAddonVersions), C(eks:CreateAddon),
    C(eks:UpdateAddon), C(eks:DeleteAddon), C(eks:TagResource), C(eks:UntagResource), and C(iam:PassRole) on the role
    of O(service_account_role_arn). C(eks:ListAddons) is not used.
  - EKS keeps O(configuration_values) as the text it was sent; the module reads JSON and YAML text back as data.
  - Supports check mode (no write requests; the default version is still read) and diff mode.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.tags
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: VPC CNI as a managed add-on with its own IAM role (IRSA), not the node role's permissions
  trainium.eks.eks_addon:
    cluster_name: trn-rehearsal
    name: vpc-cni
    service_account_role_arn: arn:aws:iam::123456789012:role/trn-rehearsal-vpc-cni
    configuration_values:
      env:
        ENABLE_PREFIX_DELEGATION: "true"
    tags:
      trainium.eks/cluster: trn-rehearsal
    wait: true

- name: CoreDNS at a pinned version
  trainium.eks.eks_addon:
    cluster_name: trn-rehearsal
    name: coredns
    addon_version: v1.12.3-eksbuild.1
    resolve_conflicts: PRESERVE

- name: Stop managing kube-proxy with EKS but leave it running
  trainium.eks.eks_addon:
    cluster_name: trn-rehearsal
    name: kube-proxy
    state: absent
    preserve: true
    wait: true
"""

RETURN = r"""
addon:
  description:
    - The add-on (after the change; in check mode as it would be). Empty when it does not exist.
  returned: always
  type: dict
  contains:
    name:
      description: Add-on name.
      type: str
      sample: vpc-cni
    cluster_name:
      description: Cluster name.
      type: str
      sample: trn-rehearsal
    arn:
      description: Add-on ARN (none yet in check mode).
      type: str
      sample: arn:aws:eks:us-west-2:123456789012:addon/trn-rehearsal/vpc-cni/a2c9f3e1-7d4b-6f0e-1c2d-3e4f5a6b7c8d
    version:
      description: Add-on version.
      type: str
      sample: v1.20.4-eksbuild.2
    status:
      description: C(CREATING), C(ACTIVE), C(UPDATING), C(DELETING), C(CREATE_FAILED), C(UPDATE_FAILED), C(DELETE_FAILED) or C(DEGRADED).
      type: str
      sample: ACTIVE
    service_account_role_arn:
      description: ARN of the IAM role of the add-on's service account; null when it has none.
      type: str
      sample: arn:aws:iam::123456789012:role/trn-rehearsal-vpc-cni
    configuration_values:
      description: Configuration values as data (empty when none; the text as EKS keeps it when it is neither JSON nor YAML).
      type: raw
      sample: {env: {ENABLE_PREFIX_DELEGATION: "true"}}
    health:
      description: Health issues EKS reports, each with C(code), C(message) and C(resource_ids).
      type: dict
      sample: {issues: []}
    tags:
      description: Tags.
      type: dict
      sample: {trainium.eks/cluster: trn-rehearsal}
    publisher:
      description: Publisher of the add-on.
      type: str
      returned: when EKS reports it
      sample: eks
    owner:
      description: Owner of the add-on.
      type: str
      returned: when EKS reports it
      sample: aws
    created_at:
      description: When the add-on was created (ISO 8601).
      type: str
      returned: when EKS reports it
    modified_at:
      description: When the add-on was last changed (ISO 8601).
      type: str
      returned: when EKS reports it
updates:
  description: The EKS update started by C(UpdateAddon), as EKS returned it (empty when none).
  returned: when O(state=present)
  type: list
  elements: dict
  sample: [{id: 0e9f2a8c-1b3d-4c5e-8f70-9a1b2c3d4e5f, status: InProgress, type: AddonUpdate}]
diff:
  description: Add-on before and after, when run with C(--diff).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks_addon as ad


def _absent(module, client):
    params = module.params
    cluster, name = params["cluster_name"], params["name"]
    current = ad.describe_addon(client, cluster, name) if ad.describe_cluster(client, cluster) is not None else None
    changed = current is not None and current.get("status") != "DELETING"
    if changed and not module.check_mode:
        ad.delete_addon(client, cluster, name, preserve=params["preserve"], timeout=params["wait_timeout"])
    if current is not None and params["wait"] and not module.check_mode:
        ad.wait_for_addon(client, cluster, name, gone=True, timeout=params["wait_timeout"])
    result = dict(changed=changed, addon=dict(ad.summarize(current), status="DELETING") if current else {})
    if module._diff:
        result["diff"] = {"before": ad.summarize(current), "after": {}}
    module.exit_json(**result)


def _missing_cluster(module):
    params = module.params
    message = (f"cluster_name: EKS cluster {params['cluster_name']} does not exist in {module.region}; "
               "allowed: the name of an existing cluster")
    if not module.check_mode:
        module.fail_json(msg=message)
        return
    common.warn(module, f"{message} (check mode: the add-on {params['name']} would be created with the cluster)")
    module.exit_json(changed=True, addon={}, updates=[])


def _offered(module, client, kubernetes_version):
    """(versions newest first, default) of the add-on for the cluster's Kubernetes version.

    For an add-on EKS does not offer there, fails the module listing the ones it offers and returns None.
    """
    name = module.params["name"]
    versions, default = ad.offered_versions(ad.describe_addon_versions(client, kubernetes_version, name), name, kubernetes_version)
    if versions:
        return versions, default
    names = ad.offered_names(ad.describe_addon_versions(client, kubernetes_version))
    module.fail_json(msg=ad.name_error(name, kubernetes_version, names))
    return None


def _present(module, client, desired):
    params = module.params
    cluster_name, name = params["cluster_name"], params["name"]
    cluster = ad.describe_cluster(client, cluster_name)
    if cluster is None:
        _missing_cluster(module)
        return
    current = ad.describe_addon(client, cluster_name, name)
    if current is None:
        _create(module, client, desired, cluster.get("version"))
        return
    subject = f"add-on {name} of cluster {cluster_name}"
    if current.get("status") == "DELETING":
        module.fail_json(msg=f"{subject} is being deleted; run again once it is gone", addon=ad.summarize(current))
        return
    if current.get("status") == "CREATE_FAILED":
        module.fail_json(msg=f"{subject} is CREATE_FAILED ({ad.health_message(current)}); fix the cause, then delete it "
                             "(state=absent) and run again", addon=ad.summarize(current))
        return
    wanted = desired.get("addonVersion")
    if wanted and wanted != current.get("addonVersion"):
        offered = _offered(module, client, cluster.get("version"))
        if offered is None:
            return
        if wanted not in offered[0]:
            module.fail_json(msg=ad.version_error(name, wanted, cluster.get("version"), *offered), addon=ad.summarize(current))
            return
    if current.get("status") in ad.UNHEALTHY_STATES:
        common.warn(module, f"{subject} is {current['status']}: {ad.health_message(current)}")
    plan = ad.plan_changes(current, desired, params["resolve_conflicts"], params["purge_tags"])
    before, predicted = ad.summarize(current), ad.summarize(ad.predict(current, plan))
    updates = []
    after = current
    if plan["changed"] and not module.check_mode:
        if plan["update"] and current.get("status") in ad.BUSY_STATES:
            settled = ad.wait_until_idle(client, cluster_name, name, params["wait_timeout"])
            if settled is None or settled.get("status") in ("CREATE_FAILED", "DELETING"):
                state = settled.get("status") if settled else "gone"
                health = f" ({ad.health_message(settled)})" if settled else ""
                module.fail_json(msg=f"{subject} is {state}{health} after waiting to update it; run again", addon=ad.summarize(settled))
                return
            # What changed meanwhile counts: plan again against the settled add-on.
            current = settled
            plan = ad.plan_changes(current, desired, params["resolve_conflicts"], params["purge_tags"])
        if plan["update"]:
            updates.append(ad.update_addon(client, plan["update"], timeout=params["wait_timeout"]))
        common.update_tags(client, current["addonArn"], plan["tags_to_set"], plan["tags_to_remove"])
        after = ad.describe_addon(client, cluster_name, name) or ad.predict(current, plan)
    elif module.check_mode:
        after = ad.predict(current, plan)
    if params["wait"] and not module.check_mode and (updates or after.get("status") != "ACTIVE"):
        after = ad.wait_for_addon(client, cluster_name, name, timeout=params["wait_timeout"])
    result = dict(changed=plan["changed"], addon=ad.summarize(after), updates=updates)
    if module._diff:
        result["diff"] = {"before": before, "after": predicted}
    module.exit_json(**result)


def _create(module, client, desired, kubernetes_version):
    params = module.params
    offered = _offered(module, client, kubernetes_version)
    if offered is None:
        return
    versions, default = offered
    version = desired.get("addonVersion") or default
    if version and version not in versions:
        module.fail_json(msg=ad.version_error(params["name"], version, kubernetes_version, versions, default))
        return
    request = ad.create_request(params["cluster_name"], params["name"], desired, version, params["resolve_conflicts"])
    if module.check_mode:
        addon = ad.predict_new(request)
    else:
        addon = ad.create_addon(client, request)
        if params["wait"]:
            addon = ad.wait_for_addon(client, params["cluster_name"], params["name"], timeout=params["wait_timeout"])
    result = dict(changed=True, addon=ad.summarize(addon), updates=[])
    if module._diff:
        result["diff"] = {"before": {}, "after": ad.summarize(ad.predict_new(request))}
    module.exit_json(**result)


def main():
    argument_spec = dict(
        cluster_name=dict(type="str", required=True),
        name=dict(type="str", required=True, aliases=["addon_name"]),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        addon_version=dict(type="str"),
        service_account_role_arn=dict(type="str"),
        configuration_values=dict(type="raw"),
        resolve_conflicts=dict(type="str", choices=list(ad.RESOLVE_CONFLICTS), default="OVERWRITE"),
        preserve=dict(type="bool", default=False),
        **common.tags_and_wait_options(wait_timeout=900),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    errors = ad.validate_params(params)
    if errors:
        module.fail_json(msg=f"{len(errors)} problem(s) in the parameters: " + " | ".join(errors))
    elif params["state"] == "absent":
        common.fail_on_aws_error(module, _absent, module, module.client("eks"))
    else:
        common.fail_on_aws_error(module, _present, module, module.client("eks"), ad.desired_state(params))


if __name__ == "__main__":
    main()
