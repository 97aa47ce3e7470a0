# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input rules of EKS node groups that moto does not check (see moto_ext.py).

moto 5.2.5 creates a node group with any name, label or taint. EKS refuses,
with InvalidParameterException (HTTP 400), what the Amazon EKS API Reference
documents as out of bounds for CreateNodegroup and UpdateNodegroupConfig:

- ``nodegroupName``: letters, digits, '-' and '_', starting with a letter or
  digit, at most 63 characters (Amazon EKS User Guide, "Create a managed node
  group"; EKS answers "nodeGroupName can't be longer than 63 characters!");
- ``labels``: keys and values of 1-63 characters (UpdateNodegroupConfig's
  ``addOrUpdateLabels`` too);
- ``taints``: keys of 1-63 characters, values of at most 63, effect one of
  NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE.

A node group of capacity type CAPACITY_BLOCK needs a launch template of
market type capacity-block, and such a template needs CAPACITY_BLOCK (Amazon
EKS User Guide, "Create a managed node group with Capacity Blocks for ML"):
InvalidParameterException otherwise.

A node group whose launch template breaks EC2's rules for EFA-only network
interfaces (an EFA-only interface cannot be the primary one, card 0 device
0; EFA-only interfaces take no IP address: EC2 API Reference,
LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, InterfaceType;
EC2 User Guide, "Maximize network bandwidth on Amazon EC2 instances with
multiple network cards") cannot launch an instance: as EKS reports a launch
template its instances cannot use, the node group ends CREATE_FAILED with
the health issue Ec2LaunchTemplateInvalidConfiguration naming the rule.

The rules are written here from the API reference, apart from the
collection's own validation (plugins/module_utils/trainium_limits.py), so
that a mistake in one of them makes a test fail instead of passing twice.
A Capacity Block node group that wants instances (desired size above 0)
while its block is not active (scheduled, or expired) cannot launch them:
"instances launch only while the block is active" (Amazon EKS User Guide,
"Create a managed node group with Capacity Blocks for ML"). It ends
CREATE_FAILED at creation, or DEGRADED when UpdateNodegroupConfig grows it,
with the health issue AsgInstanceLaunchFailures (the message is ours); at
desired size 0 it is ACTIVE. The block's state is moto_ext_ec2.py's.

A node group whose subnets hold fewer free addresses than it has nodes (each
instance's primary network interface takes one; EFA-only interfaces none)
cannot launch them: as EKS reports it, the node group ends CREATE_FAILED at
creation, or DEGRADED when UpdateNodegroupConfig grows it, with the health
issue InsufficientFreeAddresses ("One or more of the subnets associated with
your managed node group does not have enough available IP addresses for new
nodes.", Amazon EKS API Reference, Issue). The collection's own check is
stricter (the VPC CNI's addresses for pods too; trainium_limits.py).

moto 5.2.5 has no UpdateNodegroupVersion (404). As the Amazon EKS API
Reference describes it (POST /clusters/<name>/node-groups/<name>/update-version),
it moves a node group to another version of the launch template it was
created with (InvalidRequestException for a group created without one,
InvalidParameterException for another template or a version the template
does not have), to another AMI release or Kubernetes version (never back:
InvalidParameterException), and answers an update of type VersionUpdate that
DescribeUpdate reads (Successful at once; AWS takes minutes). On a Capacity
Block it needs the group at desired size 0 ("When upgrading managed node
groups with Capacity Blocks, make sure that the desired size of the node
group is set to 0", Amazon EKS User Guide, "Create a managed node group with
Capacity Blocks for ML"): InvalidRequestException otherwise. AWS documents
that rule, not its message; the message here is ours.

Nothing in the collection knows about this file.
"""

from __future__ import annotations

import datetime
import json
import re
import uuid

from moto_ext_eks import _record_update  # DescribeUpdate reads the updates it records

NAME_RE = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]*$")
NAME_MAX = 63
LABEL_MAX = 63
TAINT_EFFECTS = ("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE")

_INSTALLED = []


def _error(kind, message, cluster, nodegroup):
    """moto's EKS exception ``kind`` (InvalidRequestException carries the message alone)."""
    from moto.eks import exceptions  # pylint: disable=import-outside-toplevel

    if kind == "InvalidRequestException":
        return exceptions.InvalidRequestException(message=message)
    return getattr(exceptions, kind)(clusterName=cluster, nodegroupName=nodegroup, fargateProfileName=None, addonName=None, message=message)


def name_problem(name):
    """What is wrong with a node group name, or None (the length message is EKS's own words)."""
    if isinstance(name, str) and len(name) > NAME_MAX:
        return f"nodeGroupName can't be longer than {NAME_MAX} characters!"
    if not isinstance(name, str) or not NAME_RE.match(name):
        return (f"Nodegroup name {name!r} is invalid: it must start with a letter or digit and hold only letters, digits, "
                "hyphens and underscores")
    return None


def label_problems(labels):
    """One message per label EKS refuses."""
    problems = []
    for key, value in (labels or {}).items():
        if not 1 <= len(key) <= LABEL_MAX:
            problems.append(f"Label key {key!r} is invalid: it must be 1-{LABEL_MAX} characters")
        if not 1 <= len(str(value)) <= LABEL_MAX:
            problems.append(f"Label value {value!r} of key {key!r} is invalid: it must be 1-{LABEL_MAX} characters")
    return problems


def taint_problems(taints):
    """One message per taint EKS refuses."""
    problems = []
    for taint in taints or []:
        key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect")
        if not 1 <= len(key) <= LABEL_MAX:
            problems.append(f"Taint key {key!r} is invalid: it must be 1-{LABEL_MAX} characters")
        if len(value) > LABEL_MAX:
            problems.append(f"Taint value {value!r} of key {key!r} is invalid: it must be at most {LABEL_MAX} characters")
        if effect not in TAINT_EFFECTS:
            problems.append(f"Taint effect {effect!r} of key {key!r} is invalid: it must be one of {', '.join(TAINT_EFFECTS)}")
    return problems


EFA_ONLY = "efa-only"
IP_KEYS = ("PrivateIpAddress", "PrivateIpAddresses", "SecondaryPrivateIpAddressCount", "Ipv4Prefixes", "Ipv4PrefixCount",
           "Ipv6Addresses", "Ipv6AddressCount", "Ipv6Prefixes", "Ipv6PrefixCount", "PrimaryIpv6", "AssociatePublicIpAddress")


def interface_problems(interfaces):
    """One message per network interface of a launch template that breaks EC2's EFA-only rules."""
    problems = []
    for interface in interfaces or []:
        if interface.get("InterfaceType") != EFA_ONLY:
            continue
        card, device = int(interface.get("NetworkCardIndex") or 0), int(interface.get("DeviceIndex") or 0)
        if (card, device) == (0, 0):
            problems.append("An EFA-only network interface cannot be the primary network interface (network card index 0, device index 0)")
        if any(interface.get(key) not in (None, [], 0, False, "0", "false") for key in IP_KEYS):
            problems.append(f"The EFA-only network interface at network card index {card}, device index {device} has IP addresses; "
                            "EFA-only network interfaces do not support IP addresses")
    return problems


def _launch_template(backend, launch_template):
    """moto's launch template a node group's ``launchTemplate`` (id or name) names, or None."""
    from moto_ext_ec2 import ec2_backend  # pylint: disable=import-outside-toplevel

    ec2 = ec2_backend(backend)
    try:
        return (ec2.get_launch_template(launch_template["id"]) if launch_template.get("id")
                else ec2.get_launch_template_by_name(launch_template.get("name")))
    except Exception:  # pylint: disable=broad-except
        return None


def _template_data(backend, launch_template):
    """(template id, LaunchTemplateData) of the node group's launch template version; (None, {}) when it names none."""
    template = _launch_template(backend, launch_template)
    if template is None:
        return None, {}
    version = str(launch_template.get("version") or "$Default")
    chosen = (template.default_version() if version == "$Default" else template.latest_version() if version == "$Latest"
              else next((v for v in template.versions if str(v.number) == version), None))
    return template.id, dict((chosen.data if chosen else {}) or {})


def capacity_block_problem(capacity_type, data):
    """What EKS refuses about a Capacity Block node group: capacity type CAPACITY_BLOCK and a launch template of market
    type capacity-block go together (Amazon EKS User Guide, "Create a managed node group with Capacity Blocks for ML")."""
    market = ((data or {}).get("InstanceMarketOptions") or {}).get("MarketType")
    if capacity_type == "CAPACITY_BLOCK" and market != "capacity-block":
        return ("Capacity type CAPACITY_BLOCK requires a launch template with InstanceMarketOptions MarketType capacity-block "
                "and a CapacityReservationSpecification targeting the Capacity Block")
    if market == "capacity-block" and capacity_type != "CAPACITY_BLOCK":
        return f"A launch template with MarketType capacity-block requires capacity type CAPACITY_BLOCK, not {capacity_type or 'ON_DEMAND'}"
    return None


def _minor(version):
    return tuple(int(part) for part in re.findall(r"\d+", str(version))[:2])


def version_update_problem(nodegroup, cluster_version, request, template_versions):
    """(exception name, message) of what EKS refuses in an UpdateNodegroupVersion request, or None.

    ``nodegroup`` holds status, capacityType, desiredSize, launchTemplate and version as the group has them;
    ``template_versions`` the version numbers (strings) of the group's launch template."""
    if nodegroup["status"] not in ("ACTIVE", "DEGRADED"):
        return "ResourceInUseException", f"Nodegroup {nodegroup['name']} is {nodegroup['status']}; it can be updated once it is ACTIVE"
    wanted = request.get("launchTemplate")
    have = nodegroup.get("launchTemplate") or {}
    if wanted:
        if not have:
            return ("InvalidRequestException",
                    "You can update a node group using a launch template only if the node group was originally deployed with a launch template")
        if (wanted.get("id") and wanted["id"] != have.get("id")) or (wanted.get("name") and wanted["name"] != have.get("name")):
            return ("InvalidParameterException",
                    f"The launch template must be the one the node group was created with ({have.get('id')}, {have.get('name')})")
        if wanted.get("version") is not None and str(wanted["version"]) not in template_versions:
            return "InvalidParameterException", f"Launch template {have.get('id')} has no version {wanted['version']}"
    version = request.get("version")
    if version is not None and (_minor(version) < _minor(nodegroup["version"]) or _minor(version) > _minor(cluster_version)):
        return ("InvalidParameterException",
                f"Requested Kubernetes version {version} is invalid: a node group goes from {nodegroup['version']} up to the cluster's "
                f"{cluster_version}, never back")
    if nodegroup.get("capacityType") == "CAPACITY_BLOCK" and int(nodegroup.get("desiredSize") or 0) > 0:
        return ("InvalidRequestException",
                f"Nodegroup {nodegroup['name']} uses a Capacity Block; set its desired size to 0 before a version update "
                f"(it is {nodegroup['desiredSize']})")
    return None


def update_nodegroup_version(self):
    """UpdateNodegroupVersion, which moto lacks: the rules of version_update_problem, then the group's new versions."""
    cluster_name, name = self._get_param("name"), self._get_param("nodegroupName") or self.path.rstrip("/").split("/")[-2]
    cluster = self.eks_backend.clusters.get(cluster_name)
    if cluster is None:
        raise _error("ResourceNotFoundException", f"No cluster found for name: {cluster_name}.", cluster_name, name)
    group = cluster.nodegroups.get(name)
    if group is None:
        raise _error("ResourceNotFoundException", f"No node group found for name: {name}.", cluster_name, name)
    request = {key: self._get_param(key) for key in ("launchTemplate", "version", "releaseVersion")}
    have_template = dict(group.launch_template or {})
    template = _launch_template(self.eks_backend, have_template) if have_template else None
    versions = [str(v.number) for v in template.versions] if template else []
    state = {"name": name, "status": group.status, "capacityType": group.capacity_type, "desiredSize": (group.scaling_config or {}).get("desiredSize"),
             "launchTemplate": have_template, "version": group.version}
    problem = version_update_problem(state, cluster.version, request, versions)
    if problem:
        raise _error(problem[0], problem[1], cluster_name, name)
    params = []
    if request["launchTemplate"] and request["launchTemplate"].get("version") is not None:
        group.launch_template = dict(have_template, version=str(request["launchTemplate"]["version"]))
        params.append({"type": "LaunchTemplateVersion", "value": str(request["launchTemplate"]["version"])})
    if request["releaseVersion"]:
        group.release_version = request["releaseVersion"]
        params.append({"type": "ReleaseVersion", "value": request["releaseVersion"]})
    if request["version"] or not request["launchTemplate"]:
        group.version = request["version"] or cluster.version
        params.append({"type": "Version", "value": group.version})
    update = _record_update(self, cluster_name, {"id": str(uuid.uuid4()), "status": "Successful", "type": "VersionUpdate", "params": params,
                                                 "createdAt": datetime.datetime.now(datetime.timezone.utc).timestamp(), "errors": []})
    return 200, {}, json.dumps({"update": update})


INSUFFICIENT_ADDRESSES = ("InsufficientFreeAddresses",
                          "One or more of the subnets associated with your managed node group does not have enough available IP "
                          "addresses for new nodes.")


def free_addresses(backend, subnet_ids):
    """Free addresses of the node group's subnets (their sum), or None when moto does not know a subnet."""
    from moto_ext_ec2 import ec2_backend  # pylint: disable=import-outside-toplevel

    ec2 = ec2_backend(backend)
    total = 0
    for subnet_id in subnet_ids or []:
        try:
            total += int(ec2.get_subnet(subnet_id).available_ip_address_count)
        except Exception:  # pylint: disable=broad-except
            return None
    return total


def address_issue(nodegroup, backend, status):
    """Mark ``nodegroup`` with InsufficientFreeAddresses when its subnets cannot hold its desired size."""
    desired = int((nodegroup.scaling_config or {}).get("desiredSize") or 0)
    free = free_addresses(backend, nodegroup.subnets)
    issues = [issue for issue in (nodegroup.health or {}).get("issues") or [] if issue.get("code") != INSUFFICIENT_ADDRESSES[0]]
    if free is not None and desired > free:
        nodegroup.status = status
        issues.append({"code": INSUFFICIENT_ADDRESSES[0], "message": INSUFFICIENT_ADDRESSES[1], "resourceIds": list(nodegroup.subnets or [])})
    elif nodegroup.status == "DEGRADED" and len(issues) < len((nodegroup.health or {}).get("issues") or []):
        nodegroup.status = "ACTIVE"  # scaled back within the addresses: EKS reports the group healthy again
    nodegroup.health = {"issues": issues}


# EKS's health issue of a node group whose Auto Scaling group cannot launch its instances (Amazon EKS API Reference,
# Issue); the message is ours.
LAUNCH_FAILURES = "AsgInstanceLaunchFailures"


def block_issue(nodegroup, backend, status):
    """Mark a Capacity Block node group that wants instances while its block is not active (scheduled or expired)
    with AsgInstanceLaunchFailures: "instances launch only while the block is active" (Amazon EKS User Guide, "Create a
    managed node group with Capacity Blocks for ML"); at desired size 0 it is healthy."""
    from moto_ext_ec2 import capacity_reservation  # pylint: disable=import-outside-toplevel

    if nodegroup.capacity_type != "CAPACITY_BLOCK" or not nodegroup.launch_template:
        return
    _template, data = _template_data(backend, nodegroup.launch_template)
    target = ((data.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget") or {}).get("CapacityReservationId")
    reservation = capacity_reservation(backend, target)
    desired = int((nodegroup.scaling_config or {}).get("desiredSize") or 0)
    before = (nodegroup.health or {}).get("issues") or []
    issues = [issue for issue in before if issue.get("code") != LAUNCH_FAILURES]
    if reservation is not None and desired > 0 and reservation["State"] != "active":
        nodegroup.status = status
        issues.append({"code": LAUNCH_FAILURES, "resourceIds": [target],
                       "message": f"Could not launch instances: Capacity Block {target} is {reservation['State']} "
                                  f"(active from {reservation['StartDate']:%Y-%m-%dT%H:%M:%SZ} to {reservation['EndDate']:%Y-%m-%dT%H:%M:%SZ})."})
    elif nodegroup.status == "DEGRADED" and not issues and len(before) > len(issues):
        nodegroup.status = "ACTIVE"
    nodegroup.health = {"issues": issues}


def _refuse(problems, cluster, nodegroup):
    if problems:
        raise _error("InvalidParameterException", "; ".join(problems), cluster, nodegroup)


def install():
    """Wrap EKSBackend.create_nodegroup and update_nodegroup_config, add UpdateNodegroupVersion (once per process)."""
    if _INSTALLED:
        return
    from moto.eks import models, urls  # pylint: disable=import-outside-toplevel
    from moto.eks.responses import EKSResponse  # pylint: disable=import-outside-toplevel

    create = models.EKSBackend.create_nodegroup
    update = models.EKSBackend.update_nodegroup_config

    def create_nodegroup(self, *args, **kwargs):
        cluster, name = kwargs.get("cluster_name"), kwargs.get("nodegroup_name")
        problems = [p for p in [name_problem(name)] if p]
        problems += label_problems(kwargs.get("labels")) + taint_problems(kwargs.get("taints"))
        template_id, data = _template_data(self, kwargs["launch_template"]) if kwargs.get("launch_template") else (None, {})
        problems += [p for p in [capacity_block_problem(kwargs.get("capacity_type"), data)] if p]
        _refuse(problems, cluster, name)
        nodegroup = create(self, *args, **kwargs)
        address_issue(nodegroup, self, "CREATE_FAILED")
        block_issue(nodegroup, self, "CREATE_FAILED")
        if template_id:
            broken = interface_problems(data.get("NetworkInterfaces"))
            if broken:
                nodegroup.status = "CREATE_FAILED"
                nodegroup.health = {"issues": [{"code": "Ec2LaunchTemplateInvalidConfiguration", "message": "; ".join(broken),
                                                "resourceIds": [template_id]}]}
        return nodegroup

    def update_nodegroup_config(self, *args, **kwargs):
        labels = (kwargs.get("labels") or {}).get("addOrUpdateLabels")
        taints = (kwargs.get("taints") or {}).get("addOrUpdateTaints")
        _refuse(label_problems(labels) + taint_problems(taints), kwargs.get("cluster_name"), kwargs.get("nodegroup_name"))
        answer = update(self, *args, **kwargs)
        if kwargs.get("scaling_config"):
            cluster = self.clusters.get(kwargs.get("cluster_name"))
            group = cluster.nodegroups.get(kwargs.get("nodegroup_name")) if cluster else None
            if group is not None:
                address_issue(group, self, "DEGRADED")
                block_issue(group, self, "DEGRADED")
        return answer

    models.EKSBackend.create_nodegroup = create_nodegroup
    models.EKSBackend.update_nodegroup_config = update_nodegroup_config
    urls.url_paths["{0}/clusters/(?P<name>[^/]+)/node-groups/(?P<nodegroupName>[^/]+)/update-version$"] = urls.response.dispatch
    EKSResponse.update_nodegroup_version = update_nodegroup_version
    _INSTALLED.append(True)
