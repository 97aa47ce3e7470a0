#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: eks_cluster
short_description: Create, update and delete an Amazon EKS cluster and its IAM OIDC provider
version_added: 0.2.0
description:
  - Creates an EKS cluster, or brings an existing one to the requested
    control plane logging, endpoint access, authentication mode, upgrade policy,
    Kubernetes version (one minor version up at a time), secrets encryption and tags.
  - Only what the task sets is compared; an option left unset never causes a change.
  - Settings that EKS cannot change in place (O(role_arn), O(subnets),
    O(security_groups), O(service_ipv4_cidr), another secrets encryption key,
    removing secrets encryption, a step back in O(authentication_mode)) make the
    task fail with a list of every such difference, before anything changes.
    A version downgrade or a jump of more than one minor version fails the same way.
  - With O(oidc_provider=true) it also keeps the IAM OpenID Connect provider of
    the cluster's issuer (client ID C(sts.amazonaws.com)), which IAM roles for
    service accounts need, and deletes it with the cluster when it carries the tag
    C(trainium.eks/cluster=<name>) (a provider of the issuer made by someone else stays).
  - With O(admin_principal_arns) it keeps an EKS access entry for each listed IAM
    principal with C(AmazonEKSClusterAdminPolicy) at cluster scope, and deletes the
    entries it created for principals no longer listed.
  - Supports check mode and diff mode.
author:
  - trainium.eks developers (@trainium-eks)
options:
  name:
    description: Name of the cluster.
    type: str
    required: true
  state:
    description:
      - V(present) creates or updates the cluster; V(absent) deletes it (and its
        OIDC provider when O(oidc_provider=true)). Deleting a cluster that does not exist is not an error.
      - EKS refuses to delete a cluster that is C(CREATING) or C(UPDATING) (a run interrupted
        during creation). With V(absent) the module first waits, whatever O(wait) says and for at
        most O(wait_timeout), until the cluster leaves those states, and retries a delete refused
        with C(ResourceInUseException) with backoff within the same bound.
      - A create refused because the new cluster role cannot be assumed yet (IAM propagation,
        C(InvalidParameterException)) is tried again a few times with backoff.
    type: str
    choices: [present, absent]
    default: present
  version:
    description:
      - Kubernetes minor version, for example V('1.34'). When creating and unset,
        EKS picks its default version.
      - On an existing cluster, a version one minor above the current one starts
        an upgrade (C(UpdateClusterVersion)); anything else but the current version fails.
    type: str
  role_arn:
    description:
      - ARN of the IAM role the EKS control plane assumes. Required to create a cluster.
    type: str
  subnets:
    description:
      - Subnet IDs for the control plane network interfaces, in at least two
        availability zones. Required to create a cluster.
      - When EKS refuses the zone of some of them at creation
        (C(UnsupportedAvailabilityZoneException), which names the zones it
        supports), the create is tried once more with the subnets in those
        zones if at least two zones are left, with a warning; the cluster tag
        C(trainium.eks/control-plane-skipped-subnets) records the subnets left
        out, which later runs do not report as a difference. Fewer than two
        zones left fails the task, naming the zones EKS supports.
    type: list
    elements: str
  security_groups:
    description: Extra security group IDs for the control plane network interfaces.
    type: list
    elements: str
  endpoint_public_access:
    description: Whether the Kubernetes API endpoint is reachable from the internet.
    type: bool
  endpoint_private_access:
    description: Whether the Kubernetes API endpoint is reachable from inside the VPC.
    type: bool
  public_access_cidrs:
    description: CIDR blocks allowed to reach the public endpoint.
    type: list
    elements: str
  logging:
    description:
      - Control plane log types to send to CloudWatch Logs; the others are turned off.
        V([]) turns all off.
    type: list
    elements: str
    choices: [api, audit, authenticator, controllerManager, scheduler]
  secrets_encryption_kms_key_arn:
    description:
      - ARN of a KMS key for envelope encryption of Kubernetes secrets. Added to
        an existing cluster with C(AssociateEncryptionConfig); it cannot be changed afterwards.
      - V("") asks for no encryption, which fails on a cluster that has it (EKS cannot remove it).
    type: str
  authentication_mode:
    description:
      - How the cluster maps IAM principals to Kubernetes identities. EKS only
        moves forward, V(CONFIG_MAP) -> V(API_AND_CONFIG_MAP) -> V(API), with
        C(UpdateClusterConfig); a step back fails before anything changes.
      - Unset creates the cluster with V(API) (access entries only, no C(aws-auth) ConfigMap)
        and leaves the mode of an existing cluster alone.
    type: str
    choices: [CONFIG_MAP, API_AND_CONFIG_MAP, API]
  upgrade_policy:
    description:
      - Support type of the cluster's Kubernetes version (C(upgradePolicy.supportType)).
        V(STANDARD) ends support with the version's standard support, after which EKS
        upgrades the control plane; V(EXTENDED) keeps the version in (billed) extended support.
      - Set at creation and changed in place (C(UpdateClusterConfig)) when the cluster reports another one.
        A cluster whose description carries no upgrade policy (older APIs) is left alone.
      - EKS moves a cluster to V(STANDARD) only while its version is in standard support. When the version the
        cluster runs (after this task's version update, if any) is in extended support (C(DescribeClusterVersions)),
        the policy stays V(EXTENDED) and the task warns, naming the version and the end of its standard support.
    type: str
    choices: [STANDARD, EXTENDED]
    default: STANDARD
  bootstrap_cluster_creator_admin:
    description:
      - Give the IAM principal that creates the cluster Kubernetes administrator
        access (with a mode that has C(API), an access entry EKS makes, which this module never deletes).
        Only used when the cluster is created.
      - V(false) with O(authentication_mode=CONFIG_MAP) fails, as EKS refuses it. With V(false), list the
        principals that need access in O(admin_principal_arns).
    type: bool
    default: true
  admin_principal_arns:
    description:
      - ARNs of IAM roles or users (at most 25) that get Kubernetes administrator access through
        EKS access entries - a C(STANDARD) entry each, tagged C(trainium.eks/access-entry=admin), with
        C(arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy) associated at cluster scope.
      - An entry that exists already (the creator's, or one made by hand) only gets the policy, if it lacks it.
        Entries this module created for principals no longer listed are deleted; entries it did not create are left alone.
      - The cluster tag C(trainium.eks/admin-entries) holds a short hash of each listed principal, so that a run
        that changes nothing reads only one C(ListAssociatedAccessPolicies) per principal.
      - Entries need the cluster C(ACTIVE) and a mode with C(API); while a new or updated cluster is not
        C(ACTIVE) yet (and O(wait=false)), the module leaves them and returns RV(access_entries_pending=true);
        run it again once the cluster is C(ACTIVE).
      - Unset leaves access entries alone (no call). V([]) removes the ones the module created.
    type: list
    elements: str
  service_ipv4_cidr:
    description: CIDR block of Kubernetes service IP addresses; fixed at creation.
    type: str
  oidc_provider:
    description:
      - Create (and keep) the IAM OIDC provider for the cluster's issuer, and delete it with the cluster.
      - The provider is tagged C(trainium.eks/cluster=<name>) so that O(state=absent) finds it after the cluster is gone;
        O(state=absent) deletes only providers with that tag (the teardown policy allows no other).
      - V(false) leaves OIDC providers alone.
    type: bool
    default: true
  tags:
    description: Tags for the cluster (and its OIDC provider). Unset leaves the cluster's tags alone.
    type: dict
    aliases: [resource_tags]
  purge_tags:
    description: Remove tags not in O(tags). Tags whose key starts with C(aws:) are never removed.
    type: bool
    default: true
  wait:
    description:
      - Wait until the cluster is C(ACTIVE) (after a create or an update) or gone (after a delete).
      - With O(state=absent) the wait before the delete, for a cluster that is C(CREATING) or
        C(UPDATING), always happens; this option only decides whether to wait afterwards until
        the cluster is gone.
      - Updates that follow each other always wait for the previous one, as EKS runs one at a time.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait, for each wait.
    type: int
    default: 1200
notes:
  - Access entries other than those of O(admin_principal_arns) are not managed; O(bootstrap_cluster_creator_admin)
    is how the caller gets access.
  - EKS can change the subnets and security groups of a running cluster since 2023; this module does not, it reports the difference.
  - Needs C(eks:DescribeCluster), C(eks:CreateCluster), C(eks:UpdateClusterConfig), C(eks:DescribeClusterVersions),
    C(eks:UpdateClusterVersion), C(eks:AssociateEncryptionConfig), C(eks:DescribeUpdate),
    C(eks:TagResource), C(eks:UntagResource), C(eks:DeleteCluster), C(iam:PassRole) on O(role_arn), and for
    the OIDC provider C(iam:ListOpenIDConnectProviders), C(iam:GetOpenIDConnectProvider),
    C(iam:CreateOpenIDConnectProvider), C(iam:AddClientIDToOpenIDConnectProvider), C(iam:DeleteOpenIDConnectProvider), C(iam:TagOpenIDConnectProvider),
    and with O(admin_principal_arns) C(eks:ListAssociatedAccessPolicies), C(eks:ListAccessEntries), C(eks:DescribeAccessEntry),
    C(eks:CreateAccessEntry), C(eks:AssociateAccessPolicy), C(eks:DeleteAccessEntry).
  - C(eks:CreateCluster) has no IAM resource type; the collection's policy (docs/iam) allows it only for a request
    whose O(tags) hold C(trainium.eks/cluster) with the cluster's name, as the eks_cluster role's tags do.
  - When EKS refuses a subnet's zone at creation (C(UnsupportedAvailabilityZoneException)), it reads the subnets' zones
    with C(ec2:DescribeSubnets) and creates the cluster once more in the zones EKS named (at least two), with a warning.
  - The tag keys C(trainium.eks/admin-entries) and C(trainium.eks/control-plane-skipped-subnets) are the module's own;
    O(tags) may not set them.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Create a cluster with API, audit and authenticator logs and an OIDC provider
  trainium.eks.eks_cluster:
    name: trn-rehearsal
    version: "1.34"
    role_arn: arn:aws:iam::123456789012:role/trn-rehearsal-cluster
    subnets: [subnet-0a1b2c3d4e5f60001, subnet-0a1b2c3d4e5f60002]
    endpoint_public_access: true
    endpoint_private_access: true
    logging: [api, audit, authenticator]
    tags:
      trainium.eks/cluster: trn-rehearsal
    wait: true
  register: eks

- name: Make the platform team's role a cluster administrator (API mode, creator entry left to EKS)
  trainium.eks.eks_cluster:
    name: trn-rehearsal
    authentication_mode: API
    admin_principal_arns:
      - arn:aws:iam::123456789012:role/platform-admins

- name: Upgrade the control plane one minor version
  trainium.eks.eks_cluster:
    name: trn-rehearsal
    version: "1.35"
    wait: true
    wait_timeout: 3600

- name: Delete the cluster and its OIDC provider
  trainium.eks.eks_cluster:
    name: trn-rehearsal
    state: absent
    wait: true
"""

RETURN = r"""
exists:
  description: Whether the cluster exists after the task (in check mode, whether it would).
  returned: always
  type: bool
  sample: true
cluster:
  description: The cluster after the task; empty when it does not exist. In check mode, the cluster as it would be (IDs unknown are null).
  returned: always
  type: dict
  contains:
    name:
      description: Cluster name.
      type: str
      sample: trn-rehearsal
    arn:
      description: Cluster ARN.
      type: str
      sample: arn:aws:eks:us-west-2:123456789012:cluster/trn-rehearsal
    status:
      description: C(CREATING), C(ACTIVE), C(UPDATING), C(DELETING) or C(FAILED).
      type: str
      sample: ACTIVE
    endpoint:
      description: URL of the Kubernetes API server.
      type: str
      sample: https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com
    certificate_authority:
      description: Base64-encoded PEM of the cluster's certificate authority.
      type: str
    version:
      description: Kubernetes minor version.
      type: str
      sample: "1.34"
    platform_version:
      description: EKS platform version.
      type: str
      sample: eks.4
    role_arn:
      description: IAM role of the control plane.
      type: str
    vpc_id:
      description: VPC of the cluster.
      type: str
    subnet_ids:
      description: Subnets of the control plane, sorted.
      type: list
      elements: str
    security_group_ids:
      description: Extra security groups, sorted.
      type: list
      elements: str
    cluster_security_group_id:
      description: The security group EKS created for the cluster.
      type: str
    endpoint_public_access:
      description: Whether the public endpoint is on.
      type: bool
    endpoint_private_access:
      description: Whether the private endpoint is on.
      type: bool
    public_access_cidrs:
      description: CIDR blocks allowed to the public endpoint, sorted.
      type: list
      elements: str
    service_ipv4_cidr:
      description: CIDR block of service IP addresses.
      type: str
      sample: 172.20.0.0/16
    logging:
      description: Enabled control plane log types, sorted.
      type: list
      elements: str
      sample: [api, audit, authenticator]
    authentication_mode:
      description: Authentication mode.
      type: str
      sample: API_AND_CONFIG_MAP
    upgrade_policy:
      description: Support type of the cluster's version (C(STANDARD) or C(EXTENDED)); null when EKS does not report it.
      type: str
      sample: STANDARD
    secrets_encryption_kms_key_arn:
      description: KMS key that encrypts secrets, or null.
      type: str
    oidc_issuer:
      description: OpenID Connect issuer URL of the cluster.
      type: str
      sample: https://oidc.eks.us-west-2.amazonaws.com/id/0123456789ABCDEF
    oidc_provider_arn:
      description: ARN of the IAM OIDC provider for the issuer when O(oidc_provider=true), else null.
      type: str
      sample: arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/0123456789ABCDEF
    tags:
      description: Tags of the cluster.
      type: dict
    admin_principal_arns:
      description:
        - The principals that are administrators through the access entries this task keeps, sorted.
        - Only with O(admin_principal_arns), and not while RV(access_entries_pending) is true.
      type: list
      elements: str
      sample: [arn:aws:iam::123456789012:role/platform-admins]
access_entries_pending:
  description:
    - Whether the access entries of O(admin_principal_arns) are left for a later run because the cluster is not C(ACTIVE) yet.
  returned: always
  type: bool
  sample: false
updates:
  description: The EKS update calls made (or that check mode would make), by kind.
  returned: always
  type: list
  elements: str
  sample: [logging, endpoint_access, upgrade_policy, tags, access_entries]
diff:
  description: Cluster settings before and after, when run with C(--diff).
  returned: when diff mode is on
  type: dict
"""

import time

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.trainium.eks.plugins.module_utils import trainium_common as common
from ansible_collections.trainium.eks.plugins.module_utils import trainium_eks as eks

# UpdateClusterConfig payload key: the name of the update in the result.
UPDATE_KINDS = {
    "logging": "logging",
    "resourcesVpcConfig": "endpoint_access",
    "accessConfig": "authentication_mode",
    "upgradePolicy": "upgrade_policy",
}


def ensure_oidc_provider(module, iam, cluster):
    """Return (changed, arn) after making sure the issuer's provider exists."""
    issuer = eks.oidc_issuer(cluster)
    arn = eks.oidc_provider_arn_for(cluster.get("arn"), issuer)
    if not issuer:
        return False, None
    existing = arn in eks.list_oidc_providers(iam) if arn else False
    if existing:
        provider = eks.get_oidc_provider(iam, arn) or {}
        if eks.OIDC_CLIENT_ID in provider.get("ClientIDList", []):
            return False, arn
        if not module.check_mode:
            eks.add_oidc_client_id(iam, arn)
        return True, arn
    if module.check_mode:
        return True, arn
    tags = dict(module.params["tags"] or {})
    tags[eks.OIDC_CLUSTER_TAG] = module.params["name"]
    return True, eks.create_oidc_provider(iam, issuer, tags)


def _look_up(client, name):
    """(the cluster or None, its diff view)."""
    cluster = eks.describe_cluster(client, name)
    return cluster, (eks.diff_view(cluster) if cluster else {})


def present(module, client, iam):
    params = module.params
    name = params["name"]
    cluster, before = _look_up(client, name)
    updates = []
    admins = params["admin_principal_arns"]

    if cluster is None:
        missing = [option for option in ("role_arn", "subnets") if not params.get(option)]
        if missing:
            module.fail_json(msg=f"{', '.join(missing)}: required to create EKS cluster {name}, which does not exist")
            return
        request = eks.create_request(params)
        if module.check_mode:
            after = eks.cluster_from_request(request)
            access = eks.plan_access_entries(after, admins, {}, {}) if admins else None
            result = eks.describe_result(after)
            _add_admins(result, admins, access)
            module.exit_json(changed=True, exists=True, cluster=result, updates=["create"] + (["access_entries"] if access else []),
                             access_entries_pending=False, **_diff(module, before, _add_admins(eks.diff_view(after), admins, access)))
            return
        try:
            cluster = eks.create_cluster(client, request, subnet_zones=lambda ids: eks.describe_subnet_zones(module.client("ec2"), ids))
        except eks.EksConfigError as e:
            module.fail_json(msg=str(e))
            return
        updates.append("create")
        skipped = eks.skipped_subnets(cluster)
        if skipped:
            common.warn(module, f"EKS cluster {name}: EKS refused the zone of subnet(s) {', '.join(sorted(skipped))} for its control plane "
                                f"({eks.UNSUPPORTED_ZONE_CODE}); created with {', '.join(cluster['resourcesVpcConfig']['subnetIds'])}. "
                                "Nodes can still use every subnet.")
        if params["wait"]:
            eks.wait_for_cluster(client, name, params["wait_timeout"])
    else:
        if cluster.get("status") in ("DELETING", "FAILED"):
            module.fail_json(msg=f"EKS cluster {name} is {cluster['status']}; delete it (state=absent) and run again",
                             cluster=eks.describe_result(cluster))
            return
        plan = eks.plan_update(cluster, params, params["purge_tags"])
        if plan["errors"]:
            module.fail_json(msg=eks.refusal(cluster, plan["errors"]))
            return
        if plan["adopted_version"]:
            module.warn(eks.adoption_note(cluster, params["version"]))
        if eks.asks_standard_policy(plan):
            plan, held = eks.hold_standard_policy(cluster, plan, eks.version_information(client, plan["version"] or cluster.get("version")))
            if held:
                module.warn(held)
        readable = eks.access_entries_usable(cluster)
        if admins and not eks.access_entries_usable(eks.apply_plan_locally(cluster, plan)):
            module.fail_json(msg=f"admin_principal_arns: got {len(admins)} principal(s) for EKS cluster {name}, whose authentication "
                                 "mode is CONFIG_MAP; allowed: none, or authentication_mode API or API_AND_CONFIG_MAP (access entries)")
            return
        if plan["changed"]:
            updates = _plan_kinds(plan)
            if module.check_mode:
                cluster = eks.apply_plan_locally(cluster, plan)
            elif not _apply(module, client, cluster, plan):
                return

    if not module.check_mode:
        cluster = eks.describe_cluster(client, name) or cluster
        readable = eks.access_entries_usable(cluster)

    access, pending = None, False
    if admins is not None:
        access, pending = converge_access_entries(module, client, cluster, admins, readable)
        if access and (access["changed"] or access["hint_before"] != access["hint_after"]):
            updates.append("access_entries")
            cluster = dict(cluster, tags=eks.tags_after_access_entries(cluster.get("tags"), access))

    oidc_arn = None
    if params["oidc_provider"]:
        oidc_changed, oidc_arn = ensure_oidc_provider(module, iam, cluster)
        if oidc_changed:
            updates.append("oidc_provider")

    after = _add_admins(eks.diff_view(cluster), admins, access)
    if access is not None and before:
        before = dict(before, admin_principal_arns=access["before"])
    module.exit_json(
        changed=bool(updates), exists=True, updates=updates, access_entries_pending=pending,
        cluster=_add_admins(eks.describe_result(cluster, oidc_arn), admins, access),
        **_diff(module, before, after),
    )


def converge_access_entries(module, client, cluster, wanted, readable):
    """(plan or None, pending): the access entries of ``wanted`` made (in check mode: planned).

    ``readable`` says whether the cluster as it is now has a mode with access
    entries; in check mode ``cluster`` may be the cluster as the plan would
    leave it. None with pending=True when the cluster is not ACTIVE yet.
    """
    if not eks.access_entries_usable(cluster):
        return None, False
    if not module.check_mode and cluster.get("status") != "ACTIVE":
        return None, True
    if readable:
        policies, stale_entries = eks.read_access_entries(client, cluster, wanted)
        foreign = eks.foreign_entries(client, cluster, wanted, policies)
        if foreign:
            module.fail_json(msg=(
                f"admin_principal_arns: {', '.join(foreign)} already {'have' if len(foreign) > 1 else 'has'} an access entry of "
                f"cluster {cluster['name']} that this module did not make and that is not a cluster admin; allowed: principals "
                "without an entry, or with one this module made (delete the other entry first: "
                "aws eks delete-access-entry --cluster-name CLUSTER --principal-arn ARN)"))
            return None, False
    else:
        # The mode goes from CONFIG_MAP to one with API in this run: no entry exists yet.
        policies, stale_entries = {}, {}
    plan = eks.plan_access_entries(cluster, wanted, policies, stale_entries)
    if not module.check_mode and (plan["changed"] or plan["hint_before"] != plan["hint_after"]):
        tags = dict(module.params["tags"] or {})
        tags.update({eks.ACCESS_ENTRY_TAG: eks.ACCESS_ENTRY_TAG_VALUE, eks.OIDC_CLUSTER_TAG: cluster["name"]})
        eks.apply_access_entries(client, cluster, plan, tags)
    return plan, False


def _add_admins(view, admins, access):
    """A result or diff view with the administrators the task keeps (when it manages them and is not pending)."""
    if admins is not None and access is not None:
        view["admin_principal_arns"] = sorted(admins)
    return view


def _plan_kinds(plan):
    kinds = []
    if plan["version"]:
        kinds.append("version")
    kinds.extend(UPDATE_KINDS[key] for payload in plan["config"] for key in payload)
    if plan["encryption"]:
        kinds.append("encryption")
    if plan["tags_to_set"] or plan["tags_to_remove"]:
        kinds.append("tags")
    return kinds


def _apply(module, client, cluster, plan):
    """Run the plan's EKS updates one after another (EKS runs one update at a time); False when the module failed."""
    name = cluster["name"]
    timeout = module.params["wait_timeout"]
    if cluster.get("status") != "ACTIVE":
        if not module.params["wait"]:
            module.fail_json(msg=f"EKS cluster {name} is {cluster.get('status')}; updates need ACTIVE (set wait=true to wait for it)")
            return False
        eks.wait_for_cluster(client, name, timeout)
    calls = []
    if plan["version"]:
        calls.append(lambda: eks.update_cluster_version(client, name, plan["version"], timeout))
    for payload in plan["config"]:
        calls.append(lambda payload=payload: eks.update_cluster_config(client, name, payload, timeout))
    if plan["encryption"]:
        calls.append(lambda: eks.associate_encryption(client, name, plan["encryption"], timeout))
    for index, call in enumerate(calls):
        update = call()
        if params_wait_after(index, len(calls), module.params["wait"]):
            eks.wait_for_update(client, name, update, timeout)
    common.update_tags(client, cluster["arn"], plan["tags_to_set"], plan["tags_to_remove"])
    return True


def params_wait_after(index, count, wait):
    """Wait after an update when another follows, or after the last one when asked to."""
    return index < count - 1 or wait


def absent(module, client, iam):
    params = module.params
    name = params["name"]
    cluster, before = _look_up(client, name)
    updates = []
    if params["oidc_provider"]:
        for arn in eks.oidc_provider_arns_of_cluster(iam, name):
            updates.append("delete_oidc_provider")
            if not module.check_mode:
                eks.delete_oidc_provider(iam, arn)
    if cluster is not None and cluster.get("status") != "DELETING":
        updates.append("delete")
        if not module.check_mode:
            deadline = time.monotonic() + params["wait_timeout"]
            if cluster.get("status") in eks.BUSY_STATES:
                # EKS refuses DeleteCluster while the cluster is CREATING/UPDATING (a run
                # interrupted during creation): wait that out whatever wait says.
                cluster = eks.wait_until_settled(client, name, params["wait_timeout"]) or {"status": "DELETING"}
            if cluster.get("status") != "DELETING":
                eks.delete_cluster(client, name, timeout=max(0, deadline - time.monotonic()))
    exists = cluster is not None
    if exists and not module.check_mode:
        if params["wait"]:
            eks.wait_for_cluster(client, name, params["wait_timeout"], gone=True)
        cluster = eks.describe_cluster(client, name)
        exists = cluster is not None
    elif module.check_mode:
        exists = False
    module.exit_json(
        changed=bool(updates), exists=exists, updates=updates, access_entries_pending=False,
        cluster=eks.describe_result(cluster) if exists else {},
        **_diff(module, before, {}),
    )


def _diff(module, before, after):
    return {"diff": {"before": before, "after": after}} if module._diff else {}


def main():
    argument_spec = dict(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        version=dict(type="str"),
        role_arn=dict(type="str"),
        subnets=dict(type="list", elements="str"),
        security_groups=dict(type="list", elements="str"),
        endpoint_public_access=dict(type="bool"),
        endpoint_private_access=dict(type="bool"),
        public_access_cidrs=dict(type="list", elements="str"),
        logging=dict(type="list", elements="str", choices=list(eks.LOG_TYPES)),
        secrets_encryption_kms_key_arn=dict(type="str", no_log=False),
        authentication_mode=dict(type="str", choices=list(eks.AUTHENTICATION_MODES)),
        upgrade_policy=dict(type="str", choices=list(eks.SUPPORT_TYPES), default="STANDARD"),
        bootstrap_cluster_creator_admin=dict(type="bool", default=True),
        admin_principal_arns=dict(type="list", elements="str"),
        service_ipv4_cidr=dict(type="str"),
        oidc_provider=dict(type="bool", default=True),
        **common.tags_and_wait_options(wait_timeout=1200),
    )
    module = AnsibleAWSModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        eks.validate_request(module.params)
        problem = None
    except eks.EksConfigError as e:
        problem = str(e)
    if problem:
        module.fail_json(msg=problem)
    else:
        common.fail_on_aws_error(module, present if module.params["state"] == "present" else absent, module, module.client("eks"), module.client("iam"))


if __name__ == "__main__":
    main()
