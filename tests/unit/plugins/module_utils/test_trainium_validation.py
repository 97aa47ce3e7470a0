# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The validation pass: argument specs of the real roles, cross-field rules, one line per problem."""

from __future__ import annotations

import pathlib

import jinja2
import jinja2.meta
import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv
from ansible_collections.trainium.eks.plugins.plugin_utils import trainium_stages
from ansible_collections.trainium.eks.plugins.module_utils.trainium_deployment import DEPLOYMENT_VARIABLES, deployment_model

ROOT = pathlib.Path(__file__).resolve().parents[4]
LOCAL = yaml.safe_load((ROOT / "inventories" / "local" / "group_vars" / "all" / "deployment.yml").read_text())
LOCAL["trainium_aws_endpoint_url"] = "http://127.0.0.1:5000"


def spec(role):
    data = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return data["argument_specs"]["main"]["options"]


def defaults(role):
    path = ROOT / "roles" / role / "defaults" / "main.yml"
    values = yaml.safe_load(path.read_text()) or {}
    # Templated defaults are resolved by the action plugin; here the literal ones are checked, and those that
    # read nothing but the inventory's deployment variables (a pinned name with the Kubernetes version).
    # (The role's own vars/main.yml are not loaded in the validation pass: a default reads them through default().)
    own = set(yaml.safe_load((ROOT / "roles" / role / "vars" / "main.yml").read_text()) or {}) \
        if (ROOT / "roles" / role / "vars" / "main.yml").is_file() else set()
    resolved, env = {}, jinja2.Environment(undefined=jinja2.StrictUndefined)
    for key, value in values.items():
        if isinstance(value, str) and "{{" in value:
            if not jinja2.meta.find_undeclared_variables(env.parse(value)) <= set(LOCAL) | own:
                continue
            try:
                value = env.from_string(value).render(**LOCAL)
            except jinja2.exceptions.UndefinedError:
                continue
        resolved[key] = value
    return resolved


def problems(role, **changes):
    values = dict(defaults(role))
    values.update({name: LOCAL[name] for name in DEPLOYMENT_VARIABLES if name in LOCAL})
    if role == "ecr":
        values["ecr_repository_name"] = LOCAL["trainium_image"]["repository"]
    values.update(changes)
    return tv.role_problems(role, spec(role), values)


NETWORK_GOOD = {
    "network_vpc_id": "",
    "network_private_subnet_ids": [],
    "network_public_subnet_ids": [],
}


@pytest.mark.parametrize("role", trainium_stages.roles(trainium_stages.load()))
def test_literal_defaults_of_every_role_are_valid(role):
    assert problems(role, eks_cluster_public_access_cidrs=["127.0.0.1/32"]) == []


def test_rules_are_registered_only_for_roles_the_stage_plan_runs():
    # Every role of the plan is checked (its spec, and its rules where it has some); rules of a role that no
    # stage runs would never apply. That every role on disk is in the plan: tests/unit/tools/test_stage_plan.py.
    planned = set(trainium_stages.roles(trainium_stages.load()))
    assert set(tv.ROLE_RULES) <= planned
    assert planned - set(tv.ROLE_RULES) == {"preflight", "trn_nodegroup"}


@pytest.mark.parametrize("role, change, line", [
    ("network", {"network_state": "gone"}, "network_state: got 'gone' (str); allowed: one of present, absent"),
    ("network", {"network_nat_gateways": "two"}, "network_nat_gateways: got 'two' (str); allowed: one of single, per_zone"),
    ("network", {"network_vpc_cidr": "10.0.0.1/16"}, "network_vpc_cidr: got '10.0.0.1/16' (str); allowed: an IPv4 network"),
    ("network", {"network_vpc_cidr": "10.0.0.0/8"},
     "network_vpc_cidr: got '10.0.0.0/8' (str); allowed: an IPv4 network in CIDR notation with a prefix from /16 to /24"),
    ("network", {"network_vpc_cidr": "fd00::/56"}, "network_vpc_cidr: got 'fd00::/56' (str)"),
    ("network", {"network_private_subnet_prefix": "nineteen"}, "network_private_subnet_prefix: got 'nineteen' (str); allowed: an integer"),
    ("network", {"network_public_subnet_prefix": 30}, "network_public_subnet_prefix: got 30 (int); allowed: an integer from 16 to 28"),
    ("network", {"network_vpc_cidr": "10.0.0.0/20"}, "network_private_subnet_prefix: got 19 (int); allowed: a prefix not shorter than the VPC's /20"),
    ("network", {"network_vpc_id": "vpc-1"}, "network_private_subnet_ids: got [] (list); allowed: the private subnets of network_vpc_id vpc-1"),
    ("network", {"network_vpc_id": "sg-1", "network_private_subnet_ids": ["subnet-1"]}, "network_vpc_id: got 'sg-1' (str); allowed: a VPC ID"),
    ("network", {"network_private_subnet_ids": ["subnet-1"]}, "network_vpc_id: got '' (str); allowed: a VPC ID when network_private_subnet_ids"),
    ("network", {"network_vpc_id": "vpc-1", "network_private_subnet_ids": ["sg-1"]}, "network_private_subnet_ids[0]: got 'sg-1' (str); allowed: a subnet ID"),
    ("eks_cluster", {"eks_cluster_logging": ["api", "bogus"]}, "eks_cluster_logging: got ['api', 'bogus'] (list); allowed: any of api, audit"),
    ("eks_cluster", {"eks_cluster_kms_deletion_window_days": 3}, "eks_cluster_kms_deletion_window_days: got 3 (int); allowed: an integer from 7 to 30"),
    ("eks_cluster", {"eks_cluster_public_access_cidrs": []}, "eks_cluster_public_access_cidrs: got [] (list); allowed: the CIDR blocks that may reach"),
    ("eks_cluster", {"eks_cluster_public_access_cidrs": ["0.0.0.0/0"]},
     "eks_cluster_public_access_cidrs[0]: got '0.0.0.0/0' (str); allowed: a block of /16 or narrower; /0 opens"),
    ("eks_cluster", {"eks_cluster_upgrade_policy": "FOREVER"}, "eks_cluster_upgrade_policy: got 'FOREVER' (str); allowed: one of STANDARD, EXTENDED"),
    ("eks_cluster", {"eks_cluster_wait_delay": 0}, "eks_cluster_wait_delay: got 0 (int); allowed: an integer from 1 to 600"),
    ("eks_cluster", {"eks_cluster_authentication_mode": "IAM"},
     "eks_cluster_authentication_mode: got 'IAM' (str); allowed: one of CONFIG_MAP, API_AND_CONFIG_MAP, API"),
    ("eks_cluster", {"eks_cluster_admin_principal_arns": ["arn:aws:sts::111122223333:assumed-role/admins/alice"]},
     "eks_cluster_admin_principal_arns[0]: got 'arn:aws:sts::111122223333:assumed-role/admins/alice' (str); allowed: the ARN of an IAM role or user"),
    ("eks_cluster", {"eks_cluster_admin_principal_arns": "arn:aws:iam::111122223333:role/a, arn:aws:iam::111122223333:role/a"},
     "eks_cluster_admin_principal_arns: got ['arn:aws:iam::111122223333:role/a', 'arn:aws:iam::111122223333:role/a'] (list); "
     "allowed: each principal once"),
    ("eks_cluster", {"eks_cluster_admin_principal_arns": [f"arn:aws:iam::111122223333:role/r{i}" for i in range(26)]},
     "eks_cluster_admin_principal_arns: got ['arn:aws:iam::111122223333:role/r0'"),
    ("eks_cluster", {"eks_cluster_kms_key_admins": ["arn:aws:sts::111122223333:assumed-role/trn-teardown/bob"]},
     "eks_cluster_kms_key_admins[0]: got 'arn:aws:sts::111122223333:assumed-role/trn-teardown/bob' (str); allowed: the ARN of an IAM role or user"),
    ("eks_cluster", {"eks_cluster_admin_principal_arns": {"role": "admins"}},
     "eks_cluster_admin_principal_arns: got {'role': 'admins'} (dict); allowed: a list"),
    ("eks_cluster", {"eks_cluster_authentication_mode": "CONFIG_MAP", "eks_cluster_admin_principal_arns": ["arn:aws:iam::111122223333:user/bob"]},
     "eks_cluster_admin_principal_arns: got ['arn:aws:iam::111122223333:user/bob'] (list); allowed: [] with eks_cluster_authentication_mode CONFIG_MAP"),
    ("eks_cluster", {"eks_cluster_authentication_mode": "CONFIG_MAP", "eks_cluster_bootstrap_creator_admin": False},
     "eks_cluster_bootstrap_creator_admin: got False (bool); allowed: true with eks_cluster_authentication_mode CONFIG_MAP"),
    ("eks_cluster", {"eks_cluster_bootstrap_creator_admin": "no"},
     "eks_cluster_bootstrap_creator_admin: got False (bool); allowed: true, or false with the principal that runs the collection"),
    ("eks_cluster", {"eks_cluster_bootstrap_creator_admin": "maybe"}, "eks_cluster_bootstrap_creator_admin: got 'maybe' (str); allowed: a boolean"),
    ("eks_cluster", {"eks_cluster_oidc_provider": False},
     "eks_cluster_vpc_cni_irsa: got True (bool); allowed: false while eks_cluster_oidc_provider is false"),
    ("eks_cluster", {"eks_cluster_vpc_cni_version": "1.20"},
     "eks_cluster_vpc_cni_version: got '1.20' (str); allowed: empty (EKS's default) or a vpc-cni add-on version"),
    ("eks_cluster", {"eks_cluster_vpc_cni_version": "v1.18.4-eksbuild.1"},
     "eks_cluster_vpc_cni_version: got 'v1.18.4-eksbuild.1' (str); allowed: empty (EKS's default) or v1.18.5 or later: the node launch "
     "templates use EFA-only network interfaces (EKS User Guide"),
    ("ecr", {"ecr_repository_name": "Bert"}, "ecr_repository_name: got 'Bert' (str); allowed: 2-256 lowercase letters"),
    ("ecr", {"ecr_encryption_type": "KMS"}, "ecr_kms_key: got '' (str); allowed: the ARN of a KMS key"),
    ("ecr", {"ecr_untagged_expire_days": 0}, "ecr_untagged_expire_days: got 0 (int); allowed: an integer from 1 to 3650"),
    ("trn_launch_template", {"trn_launch_template_metadata_hop_limit": "99"},
     "trn_launch_template_metadata_hop_limit: got 99 (int); allowed: an integer from 1 to 64"),
    ("trn_launch_template", {"trn_launch_template_metadata_hop_limit": "two"}, "trn_launch_template_metadata_hop_limit: got 'two' (str); allowed: an integer"),
    ("trn_launch_template", {"trn_launch_template_ami_release": "latest"},
     "trn_launch_template_ami_release: got 'latest' (str); allowed: 'recommended' or a published"),
    ("trn_launch_template", {"trn_launch_template_ami_id": "ami-xyz"}, "trn_launch_template_ami_id: got 'ami-xyz' (str); allowed: an AMI ID"),
    ("trn_launch_template", {"trn_launch_template_ami_release": "recommended"},
     "trn_launch_template_ami_release: got 'recommended' (str); allowed: a release from v20250920 up to, not including, v20260714, "
     "such as amazon-eks-node-al2023-x86_64-neuron-<version>-v20260610, or a base image of SDK 2.31 or later: today's recommended "
     "release ships Neuron driver 2.29 or later, and driver 2.29 needs the Neuron runtime of SDK 2.31 or later and "
     "trainium_image.base_image is SDK 2.29 (Neuron release notes)"),
    # The last DLC of the XLA line (SDK 2.30), whose runtime needs driver 2.27 or later.
    ("trn_launch_template", {"trn_launch_template_ami_release": "amazon-eks-node-al2023-x86_64-neuron-1.35-v20251120",
                             "trainium_image": {"repository": "bert-pretrain-neuron", "tag": "0.1.0", "base_image":
                                                "public.ecr.aws/neuron/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"}},
     "trn_launch_template_ami_release: got 'amazon-eks-node-al2023-x86_64-neuron-1.35-v20251120' (str); allowed: a release from "
     "v20260409 up to, not including, v20260714"),
    ("trn_launch_template", {"trn_launch_template_root_volume_iops": 100},
     "trn_launch_template_root_volume_iops: got 100 (int); allowed: an integer from 3000 to 80000"),
    ("trn_launch_template", {"trn_launch_template_placement_groups": "maybe"}, "trn_launch_template_placement_groups: got 'maybe' (str); allowed: a boolean"),
    ("trn_nodegroup", {"trn_nodegroup_ami_type": "AL2_x86_64"}, "trn_nodegroup_ami_type: got 'AL2_x86_64' (str)"),
    ("trn_nodegroup", {"trn_nodegroup_wait_retries": 0}, "trn_nodegroup_wait_retries: got 0 (int); allowed: an integer from 1 to 1000"),
    ("fsx_lustre", {"fsx_lustre_deployment_type": "PERSISTENT_1", "fsx_lustre_storage_capacity_gib": 1300,
                    "fsx_lustre_per_unit_storage_throughput": 200}, "fsx_lustre_storage_capacity_gib: got 1300 (int); allowed: 1200, 2400"),
    ("fsx_lustre", {"fsx_lustre_deployment_type": "PERSISTENT_1", "fsx_lustre_storage_capacity_gib": 1200,
                    "fsx_lustre_per_unit_storage_throughput": 125}, "fsx_lustre_per_unit_storage_throughput: got 125 (int); allowed: one of 50, 100, 200"),
    ("fsx_lustre", {"fsx_lustre_deployment_type": "SCRATCH_3"}, "fsx_lustre_deployment_type: got 'SCRATCH_3' (str); allowed: one of SCRATCH_2"),
    ("fsx_lustre", {"fsx_lustre_deployment_type": "PERSISTENT_1", "fsx_lustre_storage_capacity_gib": 1200, "fsx_lustre_per_unit_storage_throughput": 200,
                    "fsx_lustre_daily_automatic_backup_start_time": "25:00"},
     "fsx_lustre_daily_automatic_backup_start_time: got '25:00' (str); allowed: empty (AWS chooses) or HH:MM in UTC"),
    ("fsx_lustre", {"fsx_lustre_deployment_type": "PERSISTENT_1", "fsx_lustre_storage_capacity_gib": 1200, "fsx_lustre_per_unit_storage_throughput": 200,
                    "fsx_lustre_restore_backup": "newest"},
     "fsx_lustre_restore_backup: got 'newest' (str); allowed: empty (a new, empty file system), 'latest'"),
])
def test_one_bad_variable_gives_one_line(role, change, line):
    found = problems(role, eks_cluster_public_access_cidrs=["127.0.0.1/32"], **{**NETWORK_GOOD, **change}) if role == "network" \
        else problems(role, **({"eks_cluster_public_access_cidrs": ["127.0.0.1/32"]} | change))
    assert len(found) == 1, found
    assert found[0].startswith(line), found[0]
    assert "\n" not in found[0]


def test_extra_vars_strings_are_converted_as_ansible_does():
    assert problems("trn_launch_template", trn_launch_template_metadata_hop_limit="2", trn_launch_template_placement_groups="false") == []


def test_placement_groups_with_a_capacity_reservation_are_refused_with_the_reason():
    pools = [dict(LOCAL["trainium_node_pools"][0], capacity_reservation_id="cr-0123456789abcdef0")]
    found = problems("trn_launch_template", trainium_node_pools=pools)
    assert len(found) == 1 and found[0].startswith("trn_launch_template_placement_groups: got True (bool); allowed: false while trainium_node_pools[0]")
    assert "created in that placement group" in found[0]
    assert problems("trn_launch_template", trainium_node_pools=pools, trn_launch_template_placement_groups=False) == []


def test_unknown_suboption_and_missing_required_are_named():
    found = []
    problem_list = tv.Problems()
    tv.check_option(problem_list, "trainium_image", {"type": "dict", "options": {"repository": {"type": "str", "required": True}}}, {"repo": "x"})
    found = list(problem_list)
    assert "trainium_image.repo: got 'x' (str); allowed: no such key; trainium_image takes repository" in found
    assert "trainium_image.repository: got None (null); allowed: a string (required)" in found


def test_validation_problems_reports_shared_variables_once_and_unknown_roles():
    bad = dict(LOCAL, trainium_cluster_name="-bad-")
    roles = [(role, spec(role), dict(defaults(role), **bad)) for role in ("network", "ecr")] + [("no_such_role", None, {})]
    lines = tv.validation_problems(bad, roles)
    assert sum(line.startswith("trainium_cluster_name:") for line in lines) == 1
    assert any(line.startswith("validate_variables roles: got 'no_such_role' (str)") for line in lines)


def test_apply_defaults_fills_suboptions_from_the_spec_only_where_unset():
    pools = tv.apply_defaults(spec("preflight")["trainium_node_pools"]["options"], [{"name": "a", "count": 1, "root_volume_size_gib": 800}])
    assert pools[0]["root_volume_size_gib"] == 800
    assert pools[0]["capacity_type"] == "ON_DEMAND"
    assert pools[0]["labels"] == {} and pools[0]["taints"] == []


def test_model_names_every_resource_once_and_applies_pool_defaults():
    variables = {name: LOCAL[name] for name in DEPLOYMENT_VARIABLES if name in LOCAL}
    variables["trainium_node_pools"] = tv.apply_defaults(spec("preflight")["trainium_node_pools"]["options"], variables["trainium_node_pools"])
    model = deployment_model(variables)
    pool = model["node_pools"][0]
    assert pool["resource_name"] == "trn-rehearsal-trn1"
    assert (pool["min_count"], pool["max_count"], pool["root_volume_size_gib"]) == (2, 2, 500)
    assert pool["labels"] == {"trainium.eks/pool": "trn1"}
    assert pool["tags"] == {
        "project": "trainium-eks-rehearsal", "trainium.eks/cluster": "trn-rehearsal", "ManagedBy": "trainium.eks", "Name": "trn-rehearsal-trn1",
    }
    assert model["names"]["node_role"] == "trn-rehearsal-node"
    assert model["names"]["file_system"] == "trn-rehearsal-data"
    assert model["endpoint_url"] == "http://127.0.0.1:5000"


@pytest.mark.parametrize("cidr, expected", [
    ("0.0.0.0/1", "a block of /16 or narrower; /1 opens the Kubernetes API to 2,147,483,648 addresses"),
    ("128.0.0.0/1", "a block of /16 or narrower; /1 opens"),
    ("10.0.0.0/15", "a block of /16 or narrower; /15 opens"),
    ("1.2.3.4/0", "an IPv4 CIDR block without host bits, such as 0.0.0.0/0"),
    ("10.1.2.3/16", "an IPv4 CIDR block without host bits, such as 10.1.0.0/16"),
    ("203.0.113.0/24", "your own addresses; this is a documentation range (RFC 5737)"),
    ("198.51.100.0/25", "your own addresses; this is a documentation range"),
    ("192.0.2.7/32", "your own addresses; this is a documentation range"),
    ("not-a-cidr", "an IPv4 CIDR block such as"),
])
def test_public_access_cidrs_refused(cidr, expected):
    found = problems("eks_cluster", eks_cluster_public_access_cidrs=["127.0.0.1/32", cidr])
    assert len(found) == 1, found
    assert found[0].startswith(f"eks_cluster_public_access_cidrs[1]: got {cidr!r} (str); allowed: {expected}"), found


@pytest.mark.parametrize("cidr", ["10.0.0.0/16", "52.94.0.0/22", "127.0.0.1/32", "203.0.0.0/16"])
def test_public_access_cidrs_accepted(cidr):
    assert problems("eks_cluster", eks_cluster_public_access_cidrs=[cidr]) == []


def test_wide_public_access_needs_the_opt_in():
    wide = ["0.0.0.0/1", "128.0.0.0/1"]
    assert len(problems("eks_cluster", eks_cluster_public_access_cidrs=wide)) == 2
    assert problems("eks_cluster", eks_cluster_public_access_cidrs=wide, eks_cluster_public_access_from_anywhere=True) == []
    # The opt-in does not excuse a typo or a placeholder.
    assert len(problems("eks_cluster", eks_cluster_public_access_cidrs=["1.2.3.4/0", "203.0.113.0/24"],
                        eks_cluster_public_access_from_anywhere=True)) == 2


def test_creator_admin_off_is_fine_with_another_administrator_or_without_the_access_check():
    arns = ["arn:aws:iam::111122223333:role/platform-admins", "arn:aws:iam::111122223333:user/ops/carol@example.com"]
    assert problems("eks_cluster", eks_cluster_public_access_cidrs=["127.0.0.1/32"], eks_cluster_bootstrap_creator_admin=False,
                    eks_cluster_admin_principal_arns=arns) == []
    assert problems("eks_cluster", eks_cluster_public_access_cidrs=["127.0.0.1/32"], eks_cluster_bootstrap_creator_admin=False,
                    eks_cluster_verify_access=False) == []
    # Teardown needs the names only.
    assert problems("eks_cluster", eks_cluster_state="absent", eks_cluster_authentication_mode="CONFIG_MAP",
                    eks_cluster_admin_principal_arns=arns[:1], eks_cluster_public_access_cidrs=["127.0.0.1/32"]) == []
