# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""security_group_differences / security_groups_in_place: would ec2_security_group change these groups?

The groups are the trn_launch_template role's pair (nodes and Lustre) as EC2's
DescribeSecurityGroups returns them (CamelCase) and as
amazon.aws.ec2_security_group_info returns them (snake_case, tags as a dict,
made here the way that module makes them); the wanted side is spelled as the
role spells ec2_security_group's options.
"""

from __future__ import annotations

import copy

import pytest

from ansible.module_utils.common.dict_transformations import camel_dict_to_snake_dict
from ansible_collections.trainium.eks.plugins.filter import security_group as sg

CLUSTER = "trn-rehearsal"
ACCOUNT = "123456789012"
NODES, LUSTRE, EKS = "sg-0aaaaaaaaaaaaaaa1", "sg-0bbbbbbbbbbbbbbb2", "sg-0ccccccccccccccc3"
TAGS = {"trainium.eks/cluster": CLUSTER, "ManagedBy": "trainium.eks"}
NODES_DESC = f"Trainium nodes of {CLUSTER}: all traffic from the nodes (EFA) and from the EKS cluster"
LUSTRE_DESC = f"FSx for Lustre of {CLUSTER}: Lustre traffic from itself and the Trainium nodes"
LUSTRE_PORTS = [988, "1018-1023"]
EGRESS = [{"proto": "all", "cidr_ip": "0.0.0.0/0", "rule_desc": "All outbound traffic"}]


def wanted():
    """Both groups as the role gives them to ec2_security_group (vars/main.yml of trn_launch_template)."""
    return [
        {"name": f"{CLUSTER}-nodes", "description": NODES_DESC,
         "rules": [
             {"proto": "all", "group_name": f"{CLUSTER}-nodes", "rule_desc": "All traffic between the nodes (EFA)"},
             {"proto": "all", "group_id": EKS, "rule_desc": "All traffic from the EKS cluster"},
             {"proto": "tcp", "ports": list(LUSTRE_PORTS), "group_id": LUSTRE, "rule_desc": "Lustre from the FSx file system"},
         ],
         "rules_egress": copy.deepcopy(EGRESS), "tags": dict(TAGS, Name=f"{CLUSTER}-nodes")},
        {"name": f"{CLUSTER}-lustre", "description": LUSTRE_DESC,
         "rules": [
             {"proto": "tcp", "ports": list(LUSTRE_PORTS), "group_name": f"{CLUSTER}-lustre", "rule_desc": "Lustre between the file servers"},
             {"proto": "tcp", "ports": list(LUSTRE_PORTS), "group_id": NODES, "rule_desc": "Lustre from the Trainium nodes"},
         ],
         "rules_egress": copy.deepcopy(EGRESS), "tags": dict(TAGS, Name=f"{CLUSTER}-lustre")},
    ]


def _pair(group_id, description):
    return {"GroupId": group_id, "UserId": ACCOUNT, "Description": description}


def _permission(protocol, pairs=(), cidrs=(), ports=None):
    permission = {"IpProtocol": protocol, "UserIdGroupPairs": list(pairs), "IpRanges": [{"CidrIp": c, "Description": d} for c, d in cidrs],
                  "Ipv6Ranges": [], "PrefixListIds": []}
    if ports:
        permission["FromPort"], permission["ToPort"] = ports
    return permission


EGRESS_PERMISSIONS = [_permission("-1", cidrs=[("0.0.0.0/0", "All outbound traffic")])]


def boto3_groups():
    """What DescribeSecurityGroups returns for the pair once ec2_security_group made them (one pair per rule, AWS's grouping)."""
    return [
        {"GroupName": f"{CLUSTER}-nodes", "GroupId": NODES, "OwnerId": ACCOUNT, "VpcId": "vpc-0123", "Description": NODES_DESC,
         "IpPermissions": [
             _permission("-1", [_pair(EKS, "All traffic from the EKS cluster"), _pair(NODES, "All traffic between the nodes (EFA)")]),
             _permission("tcp", [_pair(LUSTRE, "Lustre from the FSx file system")], ports=(1018, 1023)),
             _permission("tcp", [_pair(LUSTRE, "Lustre from the FSx file system")], ports=(988, 988)),
         ],
         "IpPermissionsEgress": copy.deepcopy(EGRESS_PERMISSIONS),
         "Tags": [{"Key": "Name", "Value": f"{CLUSTER}-nodes"}] + [{"Key": k, "Value": v} for k, v in TAGS.items()]},
        {"GroupName": f"{CLUSTER}-lustre", "GroupId": LUSTRE, "OwnerId": ACCOUNT, "VpcId": "vpc-0123", "Description": LUSTRE_DESC,
         "IpPermissions": [
             _permission("tcp", [_pair(LUSTRE, "Lustre between the file servers"), _pair(NODES, "Lustre from the Trainium nodes")], ports=(988, 988)),
             _permission("tcp", [_pair(NODES, "Lustre from the Trainium nodes"), _pair(LUSTRE, "Lustre between the file servers")],
                         ports=(1018, 1023)),
         ],
         "IpPermissionsEgress": copy.deepcopy(EGRESS_PERMISSIONS),
         "Tags": [{"Key": k, "Value": v} for k, v in dict(TAGS, Name=f"{CLUSTER}-lustre").items()]},
    ]


def info_groups(groups=None):
    """ec2_security_group_info's answer: camel_dict_to_snake_dict, then the tag list as a dict."""
    snaked = []
    for group in groups if groups is not None else boto3_groups():
        group = camel_dict_to_snake_dict(group)
        group["tags"] = {tag["key"]: tag["value"] for tag in group.get("tags", [])}
        snaked.append(group)
    return snaked


@pytest.fixture(params=["ec2_security_group_info", "boto3"])
def spelling(request):
    """Run a test on both spellings of the groups: ``spelling(boto3 groups)`` gives what the filter gets."""
    return info_groups if request.param == "ec2_security_group_info" else (lambda groups=None: groups if groups is not None else boto3_groups())


def by_name(groups, name):
    (group,) = [g for g in groups if g["GroupName"] == name]
    return group


def test_registered_as_filters():
    assert sg.FilterModule().filters() == {
        "security_group_differences": sg.security_group_differences,
        "security_groups_in_place": sg.security_groups_in_place,
    }


def test_the_pair_as_the_role_makes_it_is_in_place(spelling):
    groups = spelling()
    assert sg.security_group_differences(groups, wanted()) == []
    assert sg.security_groups_in_place(groups, wanted()) is True


def test_aws_tags_are_ignored_and_rule_order_does_not_matter(spelling):
    groups = boto3_groups()
    nodes = by_name(groups, f"{CLUSTER}-nodes")
    nodes["Tags"].append({"Key": "aws:cloudformation:stack-name", "Value": "x"})
    nodes["IpPermissions"].reverse()
    spec = wanted()
    spec[1]["rules"].reverse()
    spec[0]["rules"][2]["ports"] = ["1018-1023", "988"]
    assert sg.security_group_differences(spelling(groups), spec) == []


def test_from_and_to_port_spelling_matches_too(spelling):
    spec = wanted()
    spec[0]["rules"][2:] = [
        {"proto": "tcp", "from_port": 988, "to_port": 988, "group_id": LUSTRE, "rule_desc": "Lustre from the FSx file system"},
        {"proto": "tcp", "from_port": 1018, "to_port": 1023, "group_id": LUSTRE, "rule_desc": "Lustre from the FSx file system"},
    ]
    spec[0]["rules"][0]["proto"] = "-1"
    assert sg.security_group_differences(spelling(), spec) == []


def test_another_description(spelling):
    groups = boto3_groups()
    by_name(groups, f"{CLUSTER}-lustre")["Description"] = "FSx for Lustre"
    assert sg.security_group_differences(spelling(groups), wanted()) == [f"security group {CLUSTER}-lustre: another description"]


def test_missing_rule(spelling):
    groups = boto3_groups()
    nodes = by_name(groups, f"{CLUSTER}-nodes")
    nodes["IpPermissions"] = [p for p in nodes["IpPermissions"] if p.get("FromPort") != 1018]
    assert sg.security_group_differences(spelling(groups), wanted()) == [f"security group {CLUSTER}-nodes: other ingress rules"]
    assert sg.security_groups_in_place(spelling(groups), wanted()) is False


def test_missing_port_of_a_ports_list(spelling):
    spec = wanted()
    spec[1]["rules"][1]["ports"] = [988]
    assert sg.security_group_differences(spelling(), spec) == [f"security group {CLUSTER}-lustre: other ingress rules"]


def test_extra_rule(spelling):
    groups = boto3_groups()
    by_name(groups, f"{CLUSTER}-lustre")["IpPermissions"].append(_permission("tcp", cidrs=[("0.0.0.0/0", None)], ports=(22, 22)))
    assert sg.security_group_differences(spelling(groups), wanted()) == [f"security group {CLUSTER}-lustre: other ingress rules"]


def test_extra_egress_rule(spelling):
    groups = boto3_groups()
    by_name(groups, f"{CLUSTER}-nodes")["IpPermissionsEgress"].append(_permission("tcp", cidrs=[("10.0.0.0/8", None)], ports=(443, 443)))
    assert sg.security_group_differences(spelling(groups), wanted()) == [f"security group {CLUSTER}-nodes: other egress rules"]


def test_rule_description_change(spelling):
    spec = wanted()
    spec[0]["rules"][1]["rule_desc"] = "All traffic from the EKS control plane"
    assert sg.security_group_differences(spelling(), spec) == [f"security group {CLUSTER}-nodes: other ingress rules"]


def test_rule_without_description_is_not_one_with_a_description(spelling):
    spec = wanted()
    del spec[0]["rules_egress"][0]["rule_desc"]
    assert sg.security_group_differences(spelling(), spec) == [f"security group {CLUSTER}-nodes: other egress rules"]


def test_rule_from_another_source(spelling):
    spec = wanted()
    spec[0]["rules"][1]["group_id"] = "sg-0ddddddddddddddd4"
    assert sg.security_group_differences(spelling(), spec) == [f"security group {CLUSTER}-nodes: other ingress rules"]


def test_extra_or_changed_tag(spelling):
    groups = boto3_groups()
    by_name(groups, f"{CLUSTER}-nodes")["Tags"].append({"Key": "owner", "Value": "someone"})
    assert sg.security_group_differences(spelling(groups), wanted()) == [f"security group {CLUSTER}-nodes: other tags"]
    spec = wanted()
    spec[1]["tags"]["ManagedBy"] = "terraform"
    assert sg.security_group_differences(spelling(), spec) == [f"security group {CLUSTER}-lustre: other tags"]


def test_missing_group_and_rules_that_name_it(spelling):
    """Without the Lustre group, the nodes' rule naming it by ID still matches; a group_name source never does."""
    groups = [g for g in boto3_groups() if g["GroupName"] == f"{CLUSTER}-nodes"]
    assert sg.security_group_differences(spelling(groups), wanted()) == [f"security group {CLUSTER}-lustre does not exist"]
    spec = wanted()
    spec[0]["rules"][0]["group_name"] = f"{CLUSTER}-other"
    assert sg.security_group_differences(spelling(groups), spec) == [
        f"security group {CLUSTER}-nodes: other ingress rules",
        f"security group {CLUSTER}-lustre does not exist",
    ]


def test_no_groups_at_all():
    assert sg.security_group_differences([], wanted()) == [
        f"security group {CLUSTER}-nodes does not exist",
        f"security group {CLUSTER}-lustre does not exist",
    ]
    assert sg.security_group_differences(None, wanted()) == sg.security_group_differences([], wanted())
    assert sg.security_groups_in_place(None, wanted()) is False


def test_several_differences_of_one_group_are_each_named(spelling):
    groups = boto3_groups()
    nodes = by_name(groups, f"{CLUSTER}-nodes")
    nodes["Description"] = "old"
    nodes["IpPermissionsEgress"] = []
    nodes["Tags"] = []
    assert sg.security_group_differences(spelling(groups), wanted()) == [
        f"security group {CLUSTER}-nodes: another description",
        f"security group {CLUSTER}-nodes: other egress rules",
        f"security group {CLUSTER}-nodes: other tags",
    ]


def test_ipv6_rule(spelling):
    groups = boto3_groups()
    lustre = by_name(groups, f"{CLUSTER}-lustre")
    lustre["IpPermissionsEgress"][0]["Ipv6Ranges"] = [{"CidrIpv6": "::/0", "Description": "All outbound traffic"}]
    spec = wanted()
    assert sg.security_group_differences(spelling(groups), spec) == [f"security group {CLUSTER}-lustre: other egress rules"]
    spec[1]["rules_egress"].append({"proto": "all", "cidr_ipv6": "::/0", "rule_desc": "All outbound traffic"})
    assert sg.security_group_differences(spelling(groups), spec) == []


def test_cidr_ip_given_as_a_list_as_ec2_security_group_allows(spelling):
    groups = boto3_groups()
    nodes = by_name(groups, f"{CLUSTER}-nodes")
    nodes["IpPermissionsEgress"] = [_permission("-1", cidrs=[("10.0.0.0/8", "Private"), ("172.16.0.0/12", "Private")])]
    spec = wanted()
    spec[0]["rules_egress"] = [{"proto": "all", "cidr_ip": ["10.0.0.0/8", "172.16.0.0/12"], "rule_desc": "Private"}]
    assert sg.security_group_differences(spelling(groups), spec[:1]) == []


def test_a_rule_from_a_prefix_list_is_a_difference(spelling):
    groups = boto3_groups()
    ssh = _permission("tcp", ports=(22, 22))
    ssh["PrefixListIds"] = [{"PrefixListId": "pl-0123456789abcdef0", "Description": "added by hand"}]
    by_name(groups, f"{CLUSTER}-nodes")["IpPermissions"].append(ssh)
    assert sg.security_group_differences(spelling(groups), wanted()) == [f"security group {CLUSTER}-nodes: other ingress rules"]


def _before_the_cluster():
    """The node group as tasks_from: security_groups wants it before the cluster: no cluster rule, purge_rules false."""
    spec = wanted()
    spec[0]["rules"] = [rule for rule in spec[0]["rules"] if rule.get("group_id") != EKS]
    spec[0]["purge_rules"] = False
    return spec


def test_without_purge_rules_the_rule_from_the_cluster_is_no_difference(spelling):
    assert sg.security_group_differences(spelling(), _before_the_cluster()) == []
    # The run after the cluster owns the whole rule set: the same group without the cluster rule differs then.
    spec = _before_the_cluster()
    del spec[0]["purge_rules"]
    assert sg.security_group_differences(spelling(), spec) == [f"security group {CLUSTER}-nodes: other ingress rules"]


def test_without_purge_rules_a_missing_rule_still_differs(spelling):
    groups = boto3_groups()
    nodes = by_name(groups, f"{CLUSTER}-nodes")
    nodes["IpPermissions"] = [p for p in nodes["IpPermissions"] if p.get("FromPort") != 1018]
    assert sg.security_group_differences(spelling(groups), _before_the_cluster()) == [f"security group {CLUSTER}-nodes: other ingress rules"]


def test_without_purge_rules_egress_is_still_exact(spelling):
    groups = boto3_groups()
    by_name(groups, f"{CLUSTER}-nodes")["IpPermissionsEgress"].append(_permission("tcp", cidrs=[("10.0.0.0/8", None)], ports=(443, 443)))
    assert sg.security_group_differences(spelling(groups), _before_the_cluster()) == [f"security group {CLUSTER}-nodes: other egress rules"]
