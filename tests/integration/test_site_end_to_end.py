# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""site.yml end to end, from an empty account to training and back: one build, the checks as tests of their own.

The local inventory against the rehearsal: moto for AWS, the real
kube-apiserver behind the EKS endpoint (the platform roles apply their
objects there; kwok makes the pods on its fake nodes Ready, and nothing
connects to a pod, node or Service address). Every assertion reads what
exists in the account (or the cluster, as its admin), never the playbook's
own report.

The module fixture ``deployment`` resets the shared moto once and runs
site.yml (every stage, training included); the tests then read it, in file
order: the account, the secure defaults, the platform, the training run, the
timeline, status.yml, the training stage as an AWX job, the training faults,
the EKS token of the kubeconfig, platform.yml again (check mode, node check),
infrastructure.yml again, scale.yml, parking with a tampered security group,
and last the teardown. A test that fails leaves the later ones to run on
what is there; the fixture tears the deployment down at the end if the
teardown test did not. Every AWS request of the module's runs is recorded
and checked against the operator's IAM policy of its stage (docs/iam-policy.md);
when every test of the module ran, every action of the policies must have
been requested too.

All of it is in group shared_stack: eks_cluster reaches the cluster with an
EKS token, which only the shared stack's authenticator knows.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import fnmatch
import importlib.util
import json
import pathlib
import os
import re
import shutil
import ssl
import subprocess
import threading
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_IAM_SPEC = importlib.util.spec_from_file_location("iam_policy", ROOT / "tests" / "iam" / "iam_policy.py")
iam_policy = importlib.util.module_from_spec(_IAM_SPEC)
_IAM_SPEC.loader.exec_module(iam_policy)

SHARED_STACK = "shared_stack"
pytestmark = pytest.mark.xdist_group(SHARED_STACK)

INFRASTRUCTURE = "playbooks/infrastructure.yml"
TEARDOWN = "playbooks/teardown.yml"
SITE = "site.yml"
PLATFORM = "playbooks/platform.yml"
TRAINING = "playbooks/training.yml"
STATUS = "playbooks/status.yml"
SCALE = "playbooks/scale.yml"
TRN_NODES = ["trn1-0", "trn1-1"]
SYSTEM_NODES = {"system-0", "system-1"}
MANAGED = "app.kubernetes.io/managed-by=trainium.eks"
UNHEALTHY = "trainium.eks/neuron-unhealthy"
# The pods etcd admits (roles/etcd/vars/main.yml): those of the training and precompile Volcano Jobs.
ETCD_CLIENTS = {"matchExpressions": [{"key": "trainium.eks/workload", "operator": "In", "values": ["training", "precompile"]},
                                     {"key": "volcano.sh/job-name", "operator": "Exists"}]}
DAEMONSETS = ("neuron-device-plugin", "efa-device-plugin", "neuron-monitor")
VOLCANO_CRDS = ("jobs.batch.volcano.sh", "podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh")
CLUSTER = "trn-rehearsal"
TAG = "trainium.eks/cluster"
LOG_GROUP = f"/aws/eks/{CLUSTER}/cluster"


def run_args(kubeconfig):
    return ["-e", f"trainium_kubeconfig={kubeconfig}"]


def ready(obj):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in obj["status"].get("conditions", []))


def managed_versions(kube):
    """resourceVersion of every object the deployment's roles made (a dry run must change none).

    Selected by the cluster label too: the Volcano tests of neuron_job (group shared_kube) run beside this one with
    managed-by jobs of their own.
    """
    kinds = ("daemonsets,deployments,statefulsets,services,serviceaccounts,persistentvolumeclaims,queues.scheduling.volcano.sh,"
             "jobs.batch,jobs.batch.volcano.sh,configmaps")
    ours = f"{MANAGED},{TAG}={CLUSTER}"
    listed = kube.json("get", kinds, "-A", "-l", ours)["items"]
    listed += kube.json("get", "persistentvolumes,clusterroles,clusterrolebindings,csidrivers", "-l", ours)["items"]
    return {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o["metadata"]["resourceVersion"] for o in listed}


def assert_platform_is_up(kube, aws, local_vars):
    job = local_vars["trainium_job"]
    # Device plugins and neuron-monitor: Ready on the Trainium nodes, on nothing else.
    for name in DAEMONSETS:
        ds = kube.json("-n", "kube-system", "get", "daemonset", name)
        status = ds["status"]
        assert status["desiredNumberScheduled"] == 2 and status["numberReady"] == 2, (name, status)
        pods = kube.json("-n", "kube-system", "get", "pods", "-l", f"app.kubernetes.io/name={name}")["items"]
        assert sorted(p["spec"]["nodeName"] for p in pods) == TRN_NODES, name
        assert all(ready(p) for p in pods), name

    # Platform images (issue 27): every container of the device plugins, neuron-monitor, etcd and the FSx CSI
    # driver by <tag>@<digest>, the digest recorded the first time (read from the registry's stand-ins).
    record = kube.json("-n", "kube-system", "get", "configmap", "trainium-eks-image-digests")
    recorded = json.loads(record["data"]["images.json"])
    assert record["metadata"]["labels"]["trainium.eks/cluster"] == local_vars["trainium_cluster_name"]
    platform_pods = [p for selector in ([f"app.kubernetes.io/name={n}" for n in DAEMONSETS]
                                        + ["app.kubernetes.io/name=fsx-csi-controller", "app.kubernetes.io/name=fsx-csi-node"])
                     for p in kube.json("-n", "kube-system", "get", "pods", "-l", selector)["items"]]
    platform_pods += kube.json("-n", job["namespace"], "get", "pods", "-l", "app.kubernetes.io/name=etcd-server")["items"]
    images = {c["image"] for p in platform_pods for c in p["spec"]["containers"]}
    assert len(images) == 9 and len(recorded) >= 9, sorted(images)
    for image in images:
        name, _sep, digest = image.partition("@")
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest) and recorded[name] == digest, (image, recorded)

    # Volcano: CRDs established, the job's queue open.
    for crd in VOLCANO_CRDS:
        conditions = kube.json("get", "crd", crd)["status"]["conditions"]
        assert any(c["type"] == "Established" and c["status"] == "True" for c in conditions), crd
    queue = kube.json("get", "queues.scheduling.volcano.sh", job["queue"])
    assert queue["status"]["state"] == "Open"

    # etcd: the StatefulSet Ready behind Service etcd-server:2379, on the system pool.
    namespace = job["namespace"]
    service = kube.json("-n", namespace, "get", "service", "etcd-server")
    assert 2379 in [p["port"] for p in service["spec"]["ports"]]
    statefulsets = kube.json("-n", namespace, "get", "statefulsets", "-l", MANAGED)["items"]
    assert len(statefulsets) == 1
    assert statefulsets[0]["status"].get("readyReplicas") == statefulsets[0]["spec"]["replicas"]
    etcd_pods = kube.json("-n", namespace, "get", "pods", "-l", "app.kubernetes.io/name=etcd-server")["items"]
    assert etcd_pods and {p["spec"]["nodeName"] for p in etcd_pods} <= SYSTEM_NODES

    # NetworkPolicies (issue 27): every pod of the job namespace denied all traffic, etcd admitting only the job's pods.
    # Read back only: kwok's pods have no network, so nothing enforces them here.
    policies = {p["metadata"]["name"]: p["spec"] for p in kube.json("-n", namespace, "get", "networkpolicies")["items"]}
    assert policies["trainium-eks-default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}, policies
    assert policies["etcd-server"]["ingress"] == [{"from": [{"podSelector": ETCD_CLIENTS}], "ports": [{"port": 2379, "protocol": "TCP"}]}]
    assert "egress" not in policies["etcd-server"] and policies["etcd-server-clients"]["podSelector"] == ETCD_CLIENTS

    # FSx CSI: the controller on the system pool, fsx-claim Bound to the file system the infrastructure made.
    controllers = kube.json("-n", "kube-system", "get", "pods", "-l", "app.kubernetes.io/name=fsx-csi-controller")["items"]
    assert controllers and {p["spec"]["nodeName"] for p in controllers} <= SYSTEM_NODES
    (fs,) = aws.client("fsx").describe_file_systems()["FileSystems"]
    claim = kube.json("-n", namespace, "get", "pvc", "fsx-claim")
    assert claim["status"]["phase"] == "Bound"
    volume = kube.json("get", "pv", claim["spec"]["volumeName"])
    csi = volume["spec"]["csi"]
    assert csi["driver"] == "fsx.csi.aws.com" and csi["volumeHandle"] == fs["FileSystemId"]
    assert csi["volumeAttributes"] == {"dnsname": fs["DNSName"], "mountname": fs["LustreConfiguration"]["MountName"]}
    assert volume["spec"]["accessModes"] == ["ReadWriteMany"] and "flock" in volume["spec"]["mountOptions"]


def tagged(tags, key=TAG):
    return {t["Key"]: t["Value"] for t in tags or []}.get(key)


def assert_account_holds_the_deployment(aws):
    ec2 = aws.client("ec2")
    vpcs = [v for v in ec2.describe_vpcs()["Vpcs"] if not v.get("IsDefault")]
    assert len(vpcs) == 1 and tagged(vpcs[0].get("Tags")) == CLUSTER
    vpc_id = vpcs[0]["VpcId"]
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]
    # trn1.32xlarge is offered in us-west-2b (and 2d); EKS wants a second zone: us-west-2a.
    assert sorted(s["AvailabilityZone"] for s in subnets) == ["us-west-2a", "us-west-2a", "us-west-2b", "us-west-2b"]

    eks = aws.client("eks")
    cluster = eks.describe_cluster(name=CLUSTER)["cluster"]
    assert cluster["version"] == "1.35"
    assert cluster["status"] == "ACTIVE"
    assert set(cluster["resourcesVpcConfig"]["subnetIds"]) <= {s["SubnetId"] for s in subnets}

    # NetworkPolicies are enforced: the VPC CNI's network policy agent is on (eks_cluster_network_policy).
    cni = eks.describe_addon(clusterName=CLUSTER, addonName="vpc-cni")["addon"]
    assert json.loads(cni["configurationValues"]) == {"enableNetworkPolicy": "true"}

    # The Trainium node group and the system node group (trainium_system_node_pool's defaults).
    assert sorted(eks.list_nodegroups(clusterName=CLUSTER)["nodegroups"]) == [f"{CLUSTER}-system", f"{CLUSTER}-trn1"]
    system = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=f"{CLUSTER}-system")["nodegroup"]
    assert system["status"] == "ACTIVE" and system["amiType"] == "AL2023_x86_64_STANDARD"
    assert system["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    assert system["labels"] == {"trainium.eks/pool": "system"}
    private = {s["SubnetId"] for s in subnets if tagged(s.get("Tags"), "kubernetes.io/role/internal-elb") == "1"}
    assert set(system["subnets"]) <= private and len({s["AvailabilityZone"] for s in subnets if s["SubnetId"] in system["subnets"]}) == 2
    system_data = ec2.describe_launch_template_versions(
        LaunchTemplateId=system["launchTemplate"]["id"], Versions=["$Default"])["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert system_data["InstanceType"] == "m7i.large"
    assert system_data["MetadataOptions"]["HttpTokens"] == "required" and system_data["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert not any(i.get("InterfaceType") == "efa" for i in system_data.get("NetworkInterfaces", []))

    # The Trainium node group: in the single zone that offers trn1.32xlarge, on the EFA launch template.
    group = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=f"{CLUSTER}-trn1")["nodegroup"]
    assert group["status"] == "ACTIVE"
    assert group["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    (subnet_id,) = group["subnets"]
    zone = next(s["AvailabilityZone"] for s in subnets if s["SubnetId"] == subnet_id)
    offered = {o["Location"] for o in ec2.describe_instance_type_offerings(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["trn1.32xlarge"]}])["InstanceTypeOfferings"]}
    assert zone in offered
    template_id = group["launchTemplate"]["id"]
    version = ec2.describe_launch_template_versions(LaunchTemplateId=template_id, Versions=["$Default"])["LaunchTemplateVersions"][0]
    data = version["LaunchTemplateData"]
    interfaces = sorted(data["NetworkInterfaces"], key=lambda i: (i["NetworkCardIndex"], i["DeviceIndex"]))
    # EC2's layout for several network cards: ENA primary, EFA-only at card 0 device 1 and at device 0 of every other card.
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in interfaces] == \
        [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, 8)]
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    (root,) = data["BlockDeviceMappings"]
    assert root["Ebs"]["VolumeType"] == "gp3" and root["Ebs"]["VolumeSize"] == 500
    placement_group = data["Placement"]["GroupName"]
    (pg,) = ec2.describe_placement_groups(GroupNames=[placement_group])["PlacementGroups"]
    assert pg["Strategy"] == "cluster"

    # Security groups: EFA's self-referencing all-traffic rule, Lustre's ports, nothing open to the world.
    groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": f"tag:{TAG}", "Values": [CLUSTER]}])["SecurityGroups"]
    by_name = {g["GroupName"]: g for g in groups}
    nodes, lustre = by_name[f"{CLUSTER}-nodes"], by_name[f"{CLUSTER}-lustre"]
    # Each EFA interface carries the node group and the cluster's own group, which
    # EKS does not add when a launch template names its groups.
    cluster_group = cluster["resourcesVpcConfig"]["clusterSecurityGroupId"]
    for interface in interfaces:
        assert set(interface["Groups"]) == {nodes["GroupId"], cluster_group}
    sources = {g["GroupId"] for p in nodes["IpPermissions"] if p["IpProtocol"] == "-1" for g in p["UserIdGroupPairs"]}
    assert {nodes["GroupId"], cluster_group} <= sources
    lustre_ports = {(p.get("FromPort"), p.get("ToPort")) for p in lustre["IpPermissions"] if p["IpProtocol"] == "tcp"}
    assert {(988, 988), (1018, 1023)} <= lustre_ports
    for group_ in groups:
        for permission in group_["IpPermissions"]:
            assert not any(r["CidrIp"] == "0.0.0.0/0" for r in permission.get("IpRanges", [])), group_["GroupName"]

    ecr = aws.client("ecr")
    (repo,) = ecr.describe_repositories()["repositories"]
    assert repo["repositoryName"] == "bert-pretrain-neuron"
    assert repo["imageTagMutability"] == "IMMUTABLE"
    assert repo["imageScanningConfiguration"]["scanOnPush"] is True
    assert json.loads(ecr.get_lifecycle_policy(repositoryName=repo["repositoryName"])["lifecyclePolicyText"])["rules"]

    (fs,) = aws.client("fsx").describe_file_systems()["FileSystems"]
    assert fs["Lifecycle"] == "AVAILABLE"
    assert fs["StorageCapacity"] == 1200
    assert fs["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_1"
    assert fs["LustreConfiguration"]["PerUnitStorageThroughput"] == 200
    assert tagged(fs.get("Tags")) == CLUSTER

    oidc = aws.client("iam").list_open_id_connect_providers()["OpenIDConnectProviderList"]
    assert len(oidc) == 1


def assert_secure_defaults(aws):
    """The secure defaults of docs/security.md on the deployment (the inventory leaves them alone): all five
    control plane log types into a log group kept 90 days with the deployment's tags; secrets encrypted with
    the deployment's rotated, aliased KMS key; IMDSv2 with hop limit 1 on the launch template; daily FSx backups
    kept 7 days. Returns (file system ID, key ID) for assert_secure_teardown."""
    cluster = aws.client("eks").describe_cluster(name=CLUSTER)["cluster"]
    logged = aws.control_plane_log_types(cluster)
    assert logged == ["api", "audit", "authenticator", "controllerManager", "scheduler"], logged
    group = aws.log_group(LOG_GROUP)
    assert group is not None and group["retentionInDays"] == 90
    tags = aws.client("logs").list_tags_log_group(logGroupName=LOG_GROUP)["tags"]
    assert tags[TAG] == CLUSTER and tags["ManagedBy"] == "trainium.eks" and tags["Name"] == LOG_GROUP, tags

    key = aws.secrets_key(cluster)
    kms = aws.client("kms")
    assert key["KeyState"] == "Enabled" and key["KeyManager"] == "CUSTOMER"
    assert kms.get_key_rotation_status(KeyId=key["KeyId"])["KeyRotationEnabled"] is True
    assert [a["AliasName"] for a in kms.list_aliases(KeyId=key["KeyId"])["Aliases"]] == [f"alias/{CLUSTER}-eks-secrets"]
    # Its own key policy (issue 27): the account's IAM policies decide, and the key's lifecycle is the running principal's.
    caller = aws.client("sts").get_caller_identity()
    policy = json.loads(kms.get_key_policy(KeyId=key["KeyId"], PolicyName="default")["Policy"])
    statements = {statement["Sid"]: statement for statement in policy["Statement"]}
    assert statements["AccountIamPolicies"]["Principal"] == {"AWS": f"arn:aws:iam::{caller['Account']}:root"}, policy
    assert statements["TrainiumEksKeyAdministrators"]["Principal"] == {"AWS": [caller["Arn"]]}, policy
    assert "kms:ScheduleKeyDeletion" in statements["TrainiumEksKeyAdministrators"]["Action"], policy

    ec2 = aws.client("ec2")
    templates = sorted(t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"])
    assert templates == [f"{CLUSTER}-system", f"{CLUSTER}-trn1"], templates
    for name in templates:
        data = ec2.describe_launch_template_versions(LaunchTemplateName=name, Versions=["$Default"])["LaunchTemplateVersions"][0]
        assert data["LaunchTemplateData"]["MetadataOptions"] == {"HttpTokens": "required", "HttpPutResponseHopLimit": 1,
                                                                 "HttpEndpoint": "enabled"}, (name, data["LaunchTemplateData"])

    (fs,) = aws.client("fsx").describe_file_systems()["FileSystems"]
    assert fs["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_1"
    assert fs["LustreConfiguration"]["AutomaticBackupRetentionDays"] == 7
    return fs["FileSystemId"], key["KeyId"]


def assert_secure_teardown(aws, secured, down):
    """What the teardown keeps and schedules (docs/security.md): a final backup of the file system with its
    tags, named in the output; the log group deleted; the KMS key pending deletion after 30 days."""
    file_system_id, key_id = secured
    (backup,) = aws.client("fsx").describe_backups()["Backups"]
    assert backup["FileSystem"]["FileSystemId"] == file_system_id
    assert backup["Lifecycle"] == "AVAILABLE"
    backup_tags = {t["Key"]: t["Value"] for t in backup["Tags"]}
    assert backup_tags["Name"] == f"{CLUSTER}-data" and backup_tags[TAG] == CLUSTER, backup_tags
    assert f"FSx keeps final backup {backup['BackupId']} of {CLUSTER}-data" in down.text
    assert aws.log_group(LOG_GROUP) is None
    key = aws.client("kms").describe_key(KeyId=key_id)["KeyMetadata"]
    assert key["KeyState"] == "PendingDeletion"
    waiting = key["DeletionDate"] - datetime.datetime.now(datetime.timezone.utc)
    assert datetime.timedelta(days=29) < waiting <= datetime.timedelta(days=30)


def tamper_with_the_node_security_group(aws):
    """Open TCP 22 to 0.0.0.0/0 on the Trainium nodes' security group and revoke its rule from the cluster's
    security group, as someone might by hand; returns (node group ID, cluster group ID, the ingress rules before, in a comparable form)."""
    ec2 = aws.client("ec2")
    (nodes,) = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": [f"{CLUSTER}-nodes"]}])["SecurityGroups"]
    cluster_group = aws.client("eks").describe_cluster(name=CLUSTER)["cluster"]["resourcesVpcConfig"]["clusterSecurityGroupId"]
    from_cluster = rules_from(nodes["IpPermissions"], cluster_group)
    assert from_cluster, nodes["IpPermissions"]
    ec2.revoke_security_group_ingress(GroupId=nodes["GroupId"], IpPermissions=from_cluster)
    # Put back the other sources of those rules (the nodes' own group): only the cluster's goes, which the pass
    # before the cluster does not manage, so that pass changes nothing and the pass after works from its read.
    kept = [dict(rule, UserIdGroupPairs=[pair for pair in rule["UserIdGroupPairs"] if pair["GroupId"] != cluster_group])
            for rule in from_cluster]
    kept = [rule for rule in kept if rule["UserIdGroupPairs"] or rule.get("IpRanges") or rule.get("Ipv6Ranges") or rule.get("PrefixListIds")]
    if kept:
        ec2.authorize_security_group_ingress(GroupId=nodes["GroupId"], IpPermissions=kept)
    (revoked,) = ec2.describe_security_groups(GroupIds=[nodes["GroupId"]])["SecurityGroups"]
    assert not rules_from(revoked["IpPermissions"], cluster_group)
    ec2.authorize_security_group_ingress(GroupId=nodes["GroupId"], IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
    return nodes["GroupId"], cluster_group, comparable_rules(nodes["IpPermissions"])


def rules_from(permissions, group_id):
    """The ingress rules (IpPermissions) that name security group ``group_id`` as a source."""
    return [rule for rule in permissions if group_id in [pair["GroupId"] for pair in rule.get("UserIdGroupPairs", [])]]


def comparable_rules(permissions):
    """Ingress rules as a sorted list of (protocol, from port, to port, source) - one per source, however EC2
    groups them into permissions - so that equal rule sets compare equal."""
    atoms = set()
    for rule in permissions:
        ports = (rule["IpProtocol"], rule.get("FromPort"), rule.get("ToPort"))
        atoms.update((*ports, pair["GroupId"]) for pair in rule.get("UserIdGroupPairs", []))
        atoms.update((*ports, ip["CidrIp"]) for ip in rule.get("IpRanges", []))
        atoms.update((*ports, ip["CidrIpv6"]) for ip in rule.get("Ipv6Ranges", []))
        atoms.update((*ports, prefix["PrefixListId"]) for prefix in rule.get("PrefixListIds", []))
    return sorted(atoms, key=str)


def check_platform_then_the_node_check(run_playbook, kube, kubeconfig, kube_lock):
    """playbooks/platform.yml again (no change), in check mode (no object changes), and its node check on a lost device."""
    args = run_args(kubeconfig)
    again = run_playbook(PLATFORM, args=args)
    assert again.rc == 0, again
    assert again.recap["changed"] == 0, again.changed_tasks

    before = managed_versions(kube)
    planned = run_playbook(PLATFORM, args=args + ["--check", "--diff"])
    assert planned.rc == 0, planned
    assert planned.recap["changed"] == 0, planned.changed_tasks
    assert managed_versions(kube) == before

    # One node loses its NeuronCores: the stage's check names it and the resource, and with remediation cordons it
    # alone (one run: that the check without remediation fails the same way and cordons nothing is
    # test_neuron_node_check.py's, on the module). The Volcano and node-check tests (group shared_kube) need the
    # nodes whole meanwhile.
    with kube_lock():
        kube.fault("node-lose-neuron", "trn1-0")
        try:
            fixed = run_playbook(PLATFORM, args=args + ["--tags", "neuron_node_check", "-e", "trainium_node_check_remediate=true"])
            assert fixed.rc != 0, fixed  # still not healthy: cordoned, not repaired
            bad = [line for line in fixed.output.splitlines() if line.strip().startswith("trn1-")]
            assert any("trn1-0" in line and "aws.amazon.com/neuroncore" in line for line in bad), fixed.output[-3000:]
            assert not any("trn1-1" in line for line in bad), bad
            nodes = {n["metadata"]["name"]: n["spec"] for n in kube.json("get", "nodes", "-l", "trainium.eks/pool=trn1")["items"]}
            assert nodes["trn1-0"].get("unschedulable") is True
            assert any(t["key"] == UNHEALTHY for t in nodes["trn1-0"].get("taints", []))
            assert not nodes["trn1-1"].get("unschedulable") and not nodes["trn1-1"].get("taints")
        finally:
            kube.fault("node-restore", "trn1-0")
            kube.kubectl("taint", "nodes", "trn1-0", f"{UNHEALTHY}-", check=False)
            kube.kubectl("uncordon", "trn1-0")


def registry_get(rehearsal, path):
    """GET on the rehearsal's registry API (the ECR stand-in) with its credentials and CA; the JSON answer."""
    request = urllib.request.Request(f"{rehearsal['TRAINIUM_REGISTRY_URL']}{path}", headers={
        "Authorization": "Basic " + base64.b64encode(
            f"{rehearsal['TRAINIUM_REGISTRY_USERNAME']}:{rehearsal['TRAINIUM_REGISTRY_PASSWORD']}".encode()).decode(),
        "Accept": "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"})
    context = ssl.create_default_context(cafile=rehearsal["TRAINIUM_REGISTRY_CA_FILE"])
    with urllib.request.urlopen(request, context=context, timeout=30) as answer:  # nosec - loopback registry
        return json.load(answer)


LOG_STEP = re.compile(r"LOG .* - \((\d+), (\d+)\) step_loss : ([0-9.]+) learning_rate : \S+ throughput : ([0-9.]+)")


def job_logs(kube, namespace, job):
    """The logs of a Volcano Job's pods, by pod name."""
    pods = kube.json("-n", namespace, "get", "pods", "-l", f"volcano.sh/job-name={job}")["items"]
    return {p["metadata"]["name"]: kube.kubectl("-n", namespace, "logs", p["metadata"]["name"], check=False).stdout for p in pods}


def steps_of(logs):
    """(step, loss) of every rank-0 LOG line of a job's logs, in order."""
    return [(int(m[2]), float(m[3])) for text in logs.values() for m in LOG_STEP.finditer(text)]


def assert_timeline_recorded(directory, run):
    """Each stage's start and end in the run timeline, the background stages (image, fsx) overlapping the
    infrastructure stage, and the time per stage in the summary."""
    timeline = json.loads((directory / "timeline-latest.json").read_text())
    stages = {entry["stage"]: entry for entry in timeline["stages"]}
    assert list(stages) == ["preflight", "infrastructure", "cluster", "image", "fsx", "node groups", "platform", "training"], timeline
    assert {name for name, entry in stages.items() if entry["within"]} == {"cluster", "node groups"}
    for entry in timeline["stages"]:
        assert entry["end"] >= entry["start"] and entry["seconds"] == round(entry["end"] - entry["start"], 1), entry
    # The cluster is created first (it needs only the subnets); the image build and the file system start while it
    # is created, and the file system's wait runs beside the cluster and the node groups: both in the background of
    # the infrastructure stage, joined by the training stage.
    assert stages["cluster"]["start"] < stages["image"]["start"] < stages["fsx"]["start"] < stages["cluster"]["end"], stages
    assert stages["cluster"]["end"] <= stages["node groups"]["start"], stages
    assert stages["fsx"]["end"] <= stages["training"]["end"] and stages["image"]["end"] <= stages["training"]["end"], stages
    top = [entry for entry in timeline["stages"] if not entry["within"]]
    assert timeline["stage_seconds"] == round(sum(entry["seconds"] for entry in top), 1)
    assert timeline["stage_seconds"] > timeline["wall_seconds"] and timeline["overlap"] > 1.0, timeline
    assert timeline["check_mode"] is False
    # The training stage (a real run of 60 steps) takes longer than preflight.
    assert stages["training"]["seconds"] > stages["preflight"]["seconds"], stages
    text = " ".join(run.output.split())
    assert re.search(r"Time per stage: preflight [0-9.]+ s, infrastructure [0-9.]+ s, image [0-9.]+ s, fsx [0-9.]+ s, platform [0-9.]+ s, "
                     r"training [0-9.]+ s \(within them: cluster [0-9.]+ s, node groups [0-9.]+ s\); wall [0-9.]+ s, overlap [0-9.]+", text), text[-2000:]
    assert len(list(directory.glob("timeline-*.json"))) == 2


def check_status(run_playbook, kubeconfig, local_vars, directory):
    """playbooks/status.yml on the converged stack: what it prints, its page, and that it changes nothing."""
    job = local_vars["trainium_job"]
    status = run_playbook(STATUS, args=run_args(kubeconfig) + ["-e", f"trainium_status_dir={directory}"])
    assert status.rc == 0, status
    assert status.recap["changed"] == 0, status.changed_tasks
    text = " ".join(status.output.split())
    cluster = local_vars["trainium_cluster_name"]
    assert f"- EKS cluster {cluster}: ACTIVE, Kubernetes {local_vars['trainium_kubernetes_version']}" in text, text[-4000:]
    assert f"- node pool trn1: node group {cluster}-trn1 ACTIVE, 2 node(s) wanted" in text and "Neuron/EFA: 2 of 2 node(s) healthy" in text
    assert f"- queue {job['queue']}: Open" in text
    found = re.search(rf"- job {job['name']} \(training\): Completed, pods succeeded 2; step {job['max_steps']}, loss ([0-9.]+), ([0-9.]+) seq/s", text)
    assert found and float(found.group(1)) < 9.0, text[-4000:]
    assert f"- job {job['name']}-precompile (precompile): Completed" in text
    assert re.search(r"- storage: FSx for Lustre fs-[0-9a-f]+ AVAILABLE, PERSISTENT_\d \d+ GiB", text), text[-2000:]
    page = (directory / "status.html").read_text()
    assert f"trainium.eks status: {cluster}" in page and page.count('<tr class="good">') == 2
    checked = run_playbook(STATUS, args=run_args(kubeconfig) + ["-e", f"trainium_status_dir={directory}", "--check"])
    assert checked.rc == 0 and checked.recap["changed"] == 0, checked


def assert_training_ran(kube, rehearsal, local_vars, run):
    """The training stage of site.yml on the rehearsal: image, dataset, precompile, a real training run, its report."""
    job = local_vars["trainium_job"]
    namespace, name = job["namespace"], job["name"]
    shared = pathlib.Path(rehearsal["TRAINIUM_REHEARSAL_SHARED_DIR"]) / namespace / "fsx-claim"

    # The image: built with its RUN step (in the image's history), pushed, in the registry's catalog.
    repository = local_vars["trainium_image"]["repository"]
    assert repository in registry_get(rehearsal, "/v2/_catalog")["repositories"]
    tags = [t for t in registry_get(rehearsal, f"/v2/{repository}/tags/list")["tags"] if re.fullmatch(r"0\.1\.0-[0-9a-f]{12}", t)]
    assert tags, "no content-addressed tag of the training image"
    manifest = registry_get(rehearsal, f"/v2/{repository}/manifests/{tags[0]}")
    config = registry_get(rehearsal, f"/v2/{repository}/blobs/{manifest['config']['digest']}")
    assert any("RUN" in (h.get("created_by") or "") or "SHA256SUMS" in (h.get("created_by") or "") for h in config["history"]), config["history"]

    # The dataset Job completed and left the shards and the marker on the shared volume.
    staged = [j for j in kube.json("-n", namespace, "get", "jobs.batch", "-l", MANAGED)["items"] if j["status"].get("succeeded")]
    assert staged, "the dataset staging Job did not complete"
    dataset = shared / local_vars["trainium_dataset"]["name"]
    assert sorted(dataset.glob("*.hdf5")) and (dataset / ".trainium-eks-staged").is_file()

    # Precompile, then training: gang-scheduled, one pod on each fake trn1 node, Completed.
    for job_name in (f"{name}-precompile", name):
        vcjob = kube.json("-n", namespace, "get", "jobs.batch.volcano.sh", job_name)
        assert vcjob["status"]["state"]["phase"] == "Completed", (job_name, vcjob["status"])
        pods = kube.json("-n", namespace, "get", "pods", "-l", f"volcano.sh/job-name={job_name}")["items"]
        assert sorted(p["spec"]["nodeName"] for p in pods) == TRN_NODES, job_name
        line = pods[0]["spec"]["containers"][0]["command"][-1]
        assert "--rdzv_backend etcd --rdzv_endpoint etcd-server:2379" in line and f"--nnodes 2 --nproc_per_node {job['nproc_per_node']}" in line
        # Hardened as the API server stored them: capabilities dropped, no escalation, RuntimeDefault seccomp, read-only
        # root, CPU and memory limits = requests (Guaranteed), their own ServiceAccount without a token, the image by digest.
        for pod in pods:
            spec, container = pod["spec"], pod["spec"]["containers"][0]
            assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                                    "readOnlyRootFilesystem": True}, container["securityContext"]
            assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            assert container["resources"]["limits"]["cpu"] == "124" and container["resources"]["limits"]["memory"] == "448Gi"
            assert container["resources"]["requests"] == container["resources"]["limits"] and pod["status"]["qosClass"] == "Guaranteed"
            assert spec["serviceAccountName"] == "trainium-eks-training" and spec["automountServiceAccountToken"] is False
            assert re.fullmatch(r"\S+:0\.1\.0-[0-9a-f]{12}@sha256:[0-9a-f]{64}", container["image"]), container["image"]
    # etcd's clients (the selector of its NetworkPolicy) are exactly the two jobs' pods: not the dataset's, not TensorBoard's.
    clients = {p["metadata"]["name"] for p in kube.json(
        "-n", namespace, "get", "pods", "-l", "trainium.eks/workload in (training,precompile),volcano.sh/job-name")["items"]}
    job_pods = {p["metadata"]["name"] for p in kube.json(
        "-n", namespace, "get", "pods", "-l", f"volcano.sh/job-name in ({name},{name}-precompile)")["items"]}
    assert clients == job_pods and len(job_pods) == 4, (clients, job_pods)
    account = kube.json("-n", namespace, "get", "serviceaccount", "trainium-eks-training")
    assert account["automountServiceAccountToken"] is False
    for job_name in (f"{name}-precompile", name):  # and each job's pods reach each other (NetworkPolicy <job>-peers)
        same_job = {"podSelector": {"matchLabels": {"volcano.sh/job-name": job_name}}}
        peers = kube.json("-n", namespace, "get", "networkpolicy", f"{job_name}-peers")["spec"]
        assert peers["ingress"] == [{"from": [same_job]}] and peers["egress"] == [{"to": [same_job]}], peers
    precompile = "\n".join(job_logs(kube, namespace, f"{name}-precompile").values())
    assert "Total failed compilations: 0" in precompile and "Total graphs:" in precompile
    assert sorted(p.name for p in (shared / "neuron_cache").iterdir()) == [f"{job['cacheset']}_0", f"{job['cacheset']}_1"]

    # Real torchrun workers: world size 2 nodes x nproc_per_node, the loss falls over at least 50 steps.
    logs = job_logs(kube, namespace, name)
    assert any(f"world_size {2 * job['nproc_per_node']}" in text for text in logs.values()), logs
    steps = steps_of(logs)
    assert len(steps) >= 50 and steps[-1][0] == job["max_steps"], steps[-3:]
    first, last = [loss for step, loss in steps[:5]], [loss for step, loss in steps[-5:]]
    assert sum(first) / 5 > sum(last) / 5 + 1.0, (first, last)

    # TensorBoard events and checkpoints on the shared volume; the report PNG and HTML written.
    output = shared / "output" / name
    assert list((output / "tensorboard").glob("events.out.tfevents.*"))
    assert (output / "checkpoints" / f"ckpt_{job['max_steps']}.pt").is_file()
    report = re.search(r"training report of \S+: (\S+\.html)\s+and\s+(\S+\.png)", " ".join(run.output.split()))
    assert report, run.output[-2000:]
    assert pathlib.Path(report[2]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "train/loss" in pathlib.Path(report[1]).read_text(encoding="utf-8")
    assert kube.json("-n", namespace, "get", "deployment", "tensorboard")["status"].get("availableReplicas") == 1


def pool_nodes(kube, pool="trn1"):
    return sorted(n["metadata"]["name"] for n in kube.json("get", "nodes", "-l", f"trainium.eks/pool={pool}")["items"])


def check_scale(run_playbook, aws, kube, kubeconfig, local_vars, wait_until):
    """playbooks/scale.yml (issue 12): sizes the pool's capacity cannot hold are refused before anything changes;
    the pool grows to 3 nodes (the rehearsal's node follower adds the third kwok node, as Auto Scaling would) and
    the job runs again on them with nnodes 3, resuming from its newest checkpoint."""
    args = run_args(kubeconfig)
    job = local_vars["trainium_job"]
    namespace, name = job["namespace"], job["name"]
    eks = aws.client("eks")

    def scaling():
        return eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=f"{CLUSTER}-trn1")["nodegroup"]["scalingConfig"]

    before = scaling()
    # Five trn1.32xlarge are 640 vCPUs; the rehearsal's on-demand Trn quota is 512.
    refused = run_playbook(SCALE, args=args + ["-e", "trainium_scale_nodes=5"])
    assert refused.rc != 0, refused
    assert "trainium_node_pools: got 5 x trn1.32xlarge ON_DEMAND = 640 vCPUs; allowed: at most 512 vCPUs" in refused.output, refused.output[-3000:]
    typo = run_playbook(SCALE, args=args + ["-e", "trainium_scale_nodes=three"])
    assert typo.rc != 0, typo
    assert 'trainium_scale_nodes: got "three" (str); allowed: a whole number' in " ".join(typo.output.split()), typo.output[-3000:]
    assert scaling() == before and pool_nodes(kube) == TRN_NODES

    # One worker per node keeps three nodes' workers within two cores; ten more steps than the first run.
    grown = run_playbook(SCALE, args=args + ["-e", "trainium_scale_nodes=3", "-e", "trainium_survey_nproc_per_node=1",
                                             "-e", f"trainium_survey_max_steps={job['max_steps'] + 10}"], timeout=900)
    assert grown.rc == 0, grown
    assert scaling()["desiredSize"] == 3
    assert pool_nodes(kube) == TRN_NODES + ["trn1-2"]
    vcjob = kube.json("-n", namespace, "get", "jobs.batch.volcano.sh", name)
    assert vcjob["status"]["state"]["phase"] == "Completed", vcjob["status"]
    pods = kube.json("-n", namespace, "get", "pods", "-l", f"volcano.sh/job-name={name}")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == TRN_NODES + ["trn1-2"]
    logs = job_logs(kube, namespace, name)
    text = "\n".join(logs.values())
    assert f"ckpt_{job['max_steps']}.pt at step {job['max_steps']}" in text and "world_size 3" in text, text[-3000:]
    steps = steps_of(logs)
    assert steps[0][0] > job["max_steps"] and steps[-1][0] == job["max_steps"] + 10, steps


def check_training_faults(run_playbook, kube, kubeconfig, local_vars):
    """A worker killed mid-run: Volcano restarts the job and it resumes from its last checkpoint; a job whose
    pod fails shows that pod's last log lines."""
    # One worker's death fails both pods (the peer's agent gives up its rendezvous too), and Volcano may count
    # each as a restart: room for several, so that the test is about resuming, not about how Volcano counts.
    # 70 steps: the kill lands at step 25 or a few later (run_killing_a_worker reads the logs about once a second, a
    # step takes 0.3-0.6 s on the rehearsal), well before the end; every step more is CPU the suite waits for.
    job = dict(local_vars["trainium_job"], name="bert-resume", max_steps=70, checkpoint_steps=10, max_retry=10)
    namespace = job["namespace"]
    args = run_args(kubeconfig) + ["--tags", "train"]
    resume, killed_at = run_killing_a_worker(run_playbook, kube, job, args + ["-e", json.dumps({"trainium_job": job})],
                                             lambda logs: [found for found, _loss in steps_of(logs)], at=25)
    logs = "\n".join(job_logs(kube, namespace, job["name"]).values())
    resumed = re.search(r"LOG resuming from \S+ckpt_(\d+)\.pt at step (\d+)", logs)
    assert resumed and resumed[1] == resumed[2], logs[-3000:]
    assert 10 <= int(resumed[2]) <= killed_at and int(resumed[2]) % 10 == 0, (resumed[0], killed_at)
    assert f"LOG done: step {job['max_steps']} of {job['max_steps']}" in logs
    assert re.search(r"restart \d+/10", resume.output), resume.output[-3000:]

    # A run whose workers fail (an argument the script refuses), no restarts left: the pod's last lines are shown.
    broken = dict(local_vars["trainium_job"], name="bert-broken", max_retry=0)
    failed = run_playbook(TRAINING, args=args + ["-e", json.dumps({"trainium_job": broken}), "-e", json.dumps(
        {"training_job_extra_args": ["--no_such_flag"], "training_job_log_lines": 120})])
    assert failed.rc != 0, failed
    assert re.search(r"pod bert-broken-role1-\d-0 exited with code 1", failed.output), failed.output[-3000:]
    assert "unrecognized arguments: --no_such_flag" in failed.output, failed.output[-3000:]
    for name in (job["name"], broken["name"]):
        kube.kubectl("-n", namespace, "delete", "jobs.batch.volcano.sh", name, "--wait=true")


# A workload that no file of the collection knows (docs/training.md, "Your own workload"): linear regression over
# torch.distributed, its own progress lines, a checkpoint every 5 steps under TRAINIUM_CHECKPOINT_DIR, resumed from.
OWN_TRAIN_PY = """\
import argparse
import os
import time

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--sleep", type=float, default=0.0)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    max_steps = int(os.environ["TRAINIUM_MAX_STEPS"])
    path = os.path.join(os.environ["TRAINIUM_CHECKPOINT_DIR"], "last.pt")
    torch.manual_seed(int(os.environ["TRAINIUM_SEED"]))
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    step = 0
    if os.path.exists(path):
        state = torch.load(path, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        if rank == 0:
            print(f"own-progress resumed from step {step}", flush=True)
    for param in model.parameters():
        dist.broadcast(param.data, 0)
    data = torch.Generator().manual_seed(1000 * step + rank)
    weights = torch.arange(1.0, 5.0)
    while step < max_steps:
        x = torch.randn(32, 4, generator=data)
        loss = torch.nn.functional.mse_loss(model(x).squeeze(1), x @ weights + 0.5)
        optimizer.zero_grad()
        loss.backward()
        for param in model.parameters():
            dist.all_reduce(param.grad)
            param.grad /= world
        optimizer.step()
        step += 1
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        if rank == 0:
            print(f"own-progress step {step}/{max_steps} loss {mean.item() / world:.4f} world {world}", flush=True)
            if step % 5 == 0:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path + ".tmp")
                os.replace(path + ".tmp", path)
        dist.barrier()
        time.sleep(args.sleep)
    if rank == 0:
        print(f"own-progress done {step}", flush=True)
    dist.destroy_process_group()


main()
"""
OWN_STEP = re.compile(r"own-progress step (\d+)/\d+ loss ([0-9.]+) world (\d+)")


def check_own_workload(run_playbook, kube, kubeconfig, local_vars, tmp):
    """A directory with train.py and requirements.txt as trainium_job.workload: built into an image of its own, run on
    2 nodes x 2 workers, a worker killed mid-run, resumed from the script's checkpoint to Completed, its progress lines
    shown by the wait."""
    context = tmp / "own-workload"
    context.mkdir()
    (context / "train.py").write_text(OWN_TRAIN_PY, encoding="utf-8")
    (context / "requirements.txt").write_text("# nothing beyond the base image's torch\n", encoding="utf-8")
    job = dict(local_vars["trainium_job"], name="own-linear", max_steps=40, max_retry=10,
               workload={"context": str(context), "script": "train.py", "args": ["--lr", "0.05", "--sleep", "0.2"],
                         "progress_regex": r"own-progress (step|resumed|done) "})
    namespace = job["namespace"]
    args = run_args(kubeconfig) + ["--tags", "image,precompile,train", "-e", json.dumps({"trainium_job": job})]
    try:
        _run_own_workload(run_playbook, kube, job, args)
    finally:
        # Its pods hold the shared volume's claim: left behind, they would stop the teardown's claim deletion.
        kube.kubectl("-n", namespace, "delete", "jobs.batch.volcano.sh", job["name"], "--ignore-not-found", "--wait=true")


def run_killing_a_worker(run_playbook, kube, job, args, steps, at):
    """The training stage run for ``job`` in a thread, a worker of its first pod killed once ``steps(logs)`` reaches
    ``at``: (the run's result, the step the kill came at), once the run passed and its Volcano Job completed after
    a restart."""
    namespace = job["namespace"]
    runs = {}
    worker = threading.Thread(target=lambda: runs.update(run=run_playbook(TRAINING, args=args, timeout=600)))
    worker.start()
    try:
        killed_at = None
        for attempt in range(240):  # pylint: disable=unused-variable
            found = steps(job_logs(kube, namespace, job["name"]))
            if found and found[-1] >= at:
                killed_at = found[-1]
                break
            worker.join(timeout=1)
        assert killed_at, f"the run never reached step {at}"
        print(kube.fault("kill-worker", namespace, f"{job['name']}-role1-0-0"))
    finally:
        worker.join(timeout=660)
    result = runs["run"]
    assert result.rc == 0, result
    vcjob = kube.json("-n", namespace, "get", "jobs.batch.volcano.sh", job["name"])
    assert vcjob["status"]["state"]["phase"] == "Completed" and vcjob["status"].get("retryCount", 0) >= 1, vcjob["status"]
    return result, killed_at


def _run_own_workload(run_playbook, kube, job, args):
    namespace = job["namespace"]
    own, killed_at = run_killing_a_worker(
        run_playbook, kube, job, args, lambda logs: [int(m[1]) for text in logs.values() for m in OWN_STEP.finditer(text)], at=10)
    text = " ".join(own.output.split())
    assert "trainium_job.workload is your own script: the precompile run is the built-in workload's" in text, own.output[-3000:]
    assert re.search(r"own-progress step \d+/40 loss [0-9.]+ world 4", own.output), own.output[-3000:]
    vcjob = kube.json("-n", namespace, "get", "jobs.batch.volcano.sh", job["name"])
    container = vcjob["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["TRAINIUM_CHECKPOINT_DIR"] == "/data/output/own-linear/checkpoints" and env["TRAINIUM_MAX_STEPS"] == "40"
    assert "/opt/trainium-eks/train.py --lr 0.05 --sleep 0.2" in " ".join(container["command"]), container["command"]
    logs = "\n".join(job_logs(kube, namespace, job["name"]).values())
    resumed = re.search(r"own-progress resumed from step (\d+)", logs)
    # From a checkpoint of the killed run: neither from the start nor from the end (a step or two may pass between the
    # log read that saw killed_at and the kill).
    assert resumed and 5 <= int(resumed[1]) < 40 and int(resumed[1]) % 5 == 0, (logs[-3000:], killed_at)
    assert re.search(rf"own-progress step {int(resumed[1]) + 1}/40 ", logs), logs[-3000:]
    assert "own-progress done 40" in logs
    losses = [float(m[2]) for m in OWN_STEP.finditer(logs)]
    assert losses[-1] < 0.5 * losses[0], losses


@dataclasses.dataclass
class Deployment:  # pylint: disable=too-many-instance-attributes
    """The module's one build: how to run playbooks on it, what it started from and what its runs returned."""

    run: object
    aws: object  # tests/conftest.py AwsAccount
    calls: pathlib.Path
    kubeconfig: str
    tmp: pathlib.Path
    baseline: dict
    first: object = None
    secured: tuple = (None, None)  # the file system's ID and the secrets key's ID
    runs: dict = dataclasses.field(default_factory=dict)  # the later runs a check reads again (second, park, down)
    ran: set = dataclasses.field(default_factory=set)  # the tests that ran to their end
    torn_down: bool = False
    group_lock: object = None  # tests/conftest.py group_lock
    holding: contextlib.ExitStack = dataclasses.field(default_factory=contextlib.ExitStack)
    holding_kube: bool = False  # whether ``holding`` holds group shared_kube's lock

    def hold_kube(self):
        """Hold group shared_kube's lock from now until release_kube() or the module's end (once: a second flock
        of this process would wait for itself)."""
        if not self.holding_kube:
            self.holding.enter_context(self.group_lock("shared_kube"))
            self.holding_kube = True

    def release_kube(self):
        self.holding.close()
        self.holding_kube = False

    def kube_lock(self):
        """Group shared_kube's lock for a block, unless already held."""
        return contextlib.nullcontext() if self.holding_kube else self.group_lock("shared_kube")


@pytest.fixture(scope="module")
def deployment(module_stack, local_vars, group_lock, kube, wait_until):
    """site.yml from an empty shared account, training included; torn down at the end unless a test did it.

    Group shared_kube's lock is taken before site.yml and kept through the training checks (the training stage takes
    both fake trn1 nodes' Neuron devices, and status and the platform checks count the nodes healthy): the Volcano and
    node-check tests wait. test_a_killed_worker_resumes_and_a_failing_pod_is_shown gives it back. Group shared_stack's
    lock (each test holds it while it runs) is held here for the build and the last teardown, which run outside any test.
    """
    env, aws, run, tmp = module_stack.env, module_stack.aws, module_stack.run, module_stack.tmp
    calls = iam_policy.record_calls(env, tmp / "aws-calls.jsonl")
    kubeconfig = str(tmp / "kube" / f"{CLUSTER}.yaml")
    baseline = aws.resources()
    # A new account has a new, empty file system: the rehearsal's stand-in of its volume starts empty too.
    shutil.rmtree(pathlib.Path(env["TRAINIUM_REHEARSAL_SHARED_DIR"]) / local_vars["trainium_job"]["namespace"], ignore_errors=True)
    built = Deployment(run=run, aws=aws, calls=calls, kubeconfig=kubeconfig, tmp=tmp, baseline=baseline, group_lock=group_lock)
    try:
        built.hold_kube()
        with group_lock(SHARED_STACK):
            # The whole pipeline, training included: a few minutes, and up to about 15 on 2 loaded cores (30 allowed).
            built.first = run(SITE, args=run_args(kubeconfig) + ["-e", f"trainium_timeline_dir={tmp}/runs"], timeout=1800)
        assert built.first.rc == 0, built.first
        # What the teardown check needs of the build, read here: it holds even when the secure-defaults test failed.
        encryption = aws.client("eks").describe_cluster(name=CLUSTER)["cluster"].get("encryptionConfig") or [{}]
        file_systems = aws.client("fsx").describe_file_systems()["FileSystems"]
        built.secured = (file_systems[0]["FileSystemId"] if len(file_systems) == 1 else None,
                         encryption[0].get("provider", {}).get("keyArn", "").rsplit("/", 1)[-1] or None)
        yield built
    finally:
        # Nothing of the build is left for the tests after this module, whatever failed (the shared cluster's objects
        # would outlive the next moto reset), and the Volcano tests get the pool back at its two nodes.
        try:
            if not built.torn_down:
                with built.kube_lock(), group_lock(SHARED_STACK):
                    down = run(TEARDOWN, args=run_args(kubeconfig))
                    assert down.rc == 0, down
                    wait_until(lambda: pool_nodes(kube) == TRN_NODES, timeout=60, interval=1)
        finally:
            built.release_kube()


@pytest.fixture()
def step(deployment, request):
    """The deployment, for a test that counts as run (``deployment.ran``) once it has passed."""
    yield deployment
    if getattr(request.node, "call_passed", False):  # tests/conftest.py pytest_runtest_makereport
        deployment.ran.add(request.node.originalname)


def test_site_builds_the_deployment_in_the_account(step):
    assert step.first.recap["changed"] > 0
    assert_account_holds_the_deployment(step.aws)


def test_the_deployment_has_the_secure_defaults(step):
    file_system_id, key_id = assert_secure_defaults(step.aws)
    assert step.secured == (file_system_id, key_id)


def test_the_platform_is_up(step, kube, local_vars):
    assert_platform_is_up(kube, step.aws, local_vars)


def test_the_training_stage_ran_the_job(step, kube, shared_rehearsal, local_vars):
    assert_training_ran(kube, shared_rehearsal, local_vars, step.first)


# What checkov reads: every kind of object the collection renders into the cluster (its pods as the API server made
# them from the workloads, the Volcano job's pods included), status and server bookkeeping left out.
CHECKOV_KINDS = ("daemonsets,deployments,statefulsets,jobs.batch,pods,services,serviceaccounts,configmaps,roles,rolebindings,"
                 "networkpolicies,persistentvolumeclaims")
CHECKOV_CLUSTER_KINDS = "clusterroles,clusterrolebindings,persistentvolumes,validatingadmissionpolicies,validatingadmissionpolicybindings"
CHECKOV = pathlib.Path(os.environ.get("TRAINIUM_CHECKOV", ROOT / ".venv-checkov" / "bin" / "checkov"))


def accepted_checkov_findings():
    """(check ID, resource pattern, reason) of every row of docs/security.md's table of accepted checkov findings."""
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    section = text.split("## Accepted checkov findings", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(CKV2?_K8S_\d+)` \| `([^`]+)` \| ([^|]+) \|", section, re.M)
    assert rows, "docs/security.md has no table of accepted checkov findings"
    return rows


def checkov_findings(kube, namespace, workdir):
    """{(check ID, Kind.namespace.name)} that checkov 3 reports failed over the deployment's objects."""
    ours = f"{MANAGED},{TAG}={CLUSTER}"
    objects = kube.json("get", CHECKOV_KINDS, "-A", "-l", ours)["items"]
    objects += kube.json("get", CHECKOV_CLUSTER_KINDS, "-l", ours)["items"]
    # The pods of the Volcano job and of the platform's workloads, which carry the selector labels, not always ours.
    objects += kube.json("-n", namespace, "get", "pods")["items"] + kube.json("-n", "kube-system", "get", "pods", "-l",
                                                                              "app.kubernetes.io/part-of=trainium-eks")["items"]
    seen, manifests = set(), []
    for obj in objects:
        key = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if key in seen:
            continue
        seen.add(key)
        obj.pop("status", None)
        for field in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "ownerReferences"):
            obj["metadata"].pop(field, None)
        manifests.append(json.dumps(obj))
    workdir.mkdir(parents=True, exist_ok=True)
    # JSON is YAML: one document per object.
    (workdir / "objects.yaml").write_text("\n---\n".join(manifests) + "\n", encoding="utf-8")
    ran = subprocess.run([str(CHECKOV), "--directory", str(workdir), "--framework", "kubernetes", "--output", "json",
                          "--quiet", "--compact", "--skip-download"], capture_output=True, text=True, timeout=600, check=False)
    assert ran.returncode in (0, 1), ran.stdout[-2000:] + ran.stderr[-2000:]
    report = json.loads(ran.stdout or "{}")
    failed = (report.get("results") or {}).get("failed_checks") or [] if isinstance(report, dict) else []
    assert len(seen) >= 30, sorted(seen)
    return {(f["check_id"], f["resource"]) for f in failed}, len(seen)


def test_checkov_finds_nothing_that_docs_security_does_not_list(step, kube, local_vars):
    findings, count = checkov_findings(kube, local_vars["trainium_job"]["namespace"], step.tmp / "checkov")
    accepted = accepted_checkov_findings()
    unlisted = sorted(f for f in findings if not any(f[0] == check and fnmatch.fnmatch(f[1], pattern) for check, pattern, _reason in accepted))
    assert not unlisted, f"checkov over {count} objects: findings not listed in docs/security.md: {unlisted}"
    stale = [(check, pattern) for check, pattern, _reason in accepted if not any(f[0] == check and fnmatch.fnmatch(f[1], pattern) for f in findings)]
    assert not stale, f"docs/security.md lists checkov findings that no longer occur: {stale}"


def test_the_timeline_records_every_stage(step):
    assert_timeline_recorded(step.tmp / "runs", step.first)


def test_status_reports_the_deployment(step, local_vars):
    check_status(step.run, step.kubeconfig, local_vars, step.tmp / "status")


def test_the_training_stage_alone_writes_only_the_kubeconfig(step):
    """The training stage as a job of its own, as AWX runs it (a new container: no kubeconfig there): it writes the
    kubeconfig from the cluster and changes nothing else."""
    fresh = step.tmp / "job-container" / "kubeconfig.yaml"
    with step.kube_lock():
        again = step.run(TRAINING, args=run_args(fresh))
    assert again.rc == 0, again
    assert again.changed_tasks == [
        f"trainium.eks.eks_cluster : Write the kubeconfig (exec credential plugin, no token inside) - {CLUSTER}"], again.changed_tasks
    assert oct(os.stat(fresh).st_mode & 0o777) == "0o600" and "token:" not in fresh.read_text(encoding="utf-8")
    assert "skipped (cache set complete)" in " ".join(again.output.split()), again.output[-3000:]


def test_an_own_workload_is_built_runs_resumes_after_a_killed_worker_and_shows_its_progress(step, kube, local_vars):
    with step.kube_lock():
        check_own_workload(step.run, kube, step.kubeconfig, local_vars, step.tmp)


def test_a_killed_worker_resumes_and_a_failing_pod_is_shown(step, kube, local_vars):
    try:
        with step.kube_lock():
            check_training_faults(step.run, kube, step.kubeconfig, local_vars)
    finally:
        step.release_kube()  # the training checks are done: the Volcano tests may run until scale


def test_the_kubeconfig_authenticates_with_an_eks_token(step, shared_rehearsal):
    """The kubeconfig the collection wrote authenticates with its own EKS token: kubectl has no AWS CLI to call,
    and the API server asks the token webhook."""
    assert "token:" not in pathlib.Path(step.kubeconfig).read_text(encoding="utf-8")
    assert oct(os.stat(step.kubeconfig).st_mode & 0o777) == "0o600"
    env = dict(shared_rehearsal, KUBECONFIG=step.kubeconfig)
    listed = subprocess.run(["kubectl", "get", "namespace", "kube-system", "-o", "name"], env=env, capture_output=True, text=True, check=False)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == "namespace/kube-system"


def test_the_platform_again_changes_nothing_and_its_node_check_cordons_a_lost_device(step, kube):
    check_platform_then_the_node_check(step.run, kube, step.kubeconfig, step.kube_lock)


def test_the_infrastructure_again_changes_nothing(step):
    second = step.runs["second"] = step.run(INFRASTRUCTURE, args=run_args(step.kubeconfig))
    assert second.rc == 0, second
    assert second.recap["changed"] == 0, second.changed_tasks


def test_scale_refuses_what_capacity_cannot_hold_then_grows_the_pool(step, kube, local_vars, wait_until):
    # From here the fake trn1 nodes follow the node group's size: the Volcano tests (group shared_kube) wait
    # until the teardown has given the pool its two nodes back (the lock is held until then, or the module's end).
    step.hold_kube()
    check_scale(step.run, step.aws, kube, step.kubeconfig, local_vars, wait_until)


def test_parking_the_pool_keeps_its_node_group_and_mends_a_tampered_security_group(step, kube, local_vars, wait_until):
    step.hold_kube()  # the pool's nodes follow its node group
    aws = step.aws
    # By hand, meanwhile: SSH from anywhere opened on the nodes, the rule from the cluster's security group
    # taken away. The run's pass before the cluster changes nothing (it only adds rules, and not the
    # cluster's), so the pass after it works from the groups that pass read: it must still see both.
    nodes_group, from_cluster, rules_before = tamper_with_the_node_security_group(aws)

    # count: 0 parks the pool (issue 9): the node group stays, scaled to no node.
    parked = [dict(local_vars["trainium_node_pools"][0], count=0)]
    park = step.runs["park"] = step.run(INFRASTRUCTURE, args=run_args(step.kubeconfig) + ["-e", json.dumps({"trainium_node_pools": parked})])
    assert park.rc == 0, park
    assert {name.split(" : ", 1)[0] for name in park.changed_tasks} == {"trainium.eks.trn_nodegroup", "trainium.eks.trn_launch_template"}, \
        park.changed_tasks
    # Once: by the pass after the cluster; the pass before it had nothing to do (the reuse path).
    assert len([name for name in park.changed_tasks if "trn_launch_template : Node security group" in name]) == 1, park.changed_tasks
    (nodes_now,) = aws.client("ec2").describe_security_groups(GroupIds=[nodes_group])["SecurityGroups"]
    assert not [p for p in nodes_now["IpPermissions"] if p.get("IpRanges")], nodes_now["IpPermissions"]
    assert rules_from(nodes_now["IpPermissions"], from_cluster)
    assert comparable_rules(nodes_now["IpPermissions"]) == rules_before
    group = aws.client("eks").describe_nodegroup(clusterName=CLUSTER, nodegroupName=f"{CLUSTER}-trn1")["nodegroup"]
    assert group["scalingConfig"] == {"minSize": 0, "maxSize": 1, "desiredSize": 0}
    wait_until(lambda: pool_nodes(kube) == [], timeout=60, interval=1)


def test_teardown_empties_the_account_and_the_cluster(step, kube, local_vars, wait_until, request):
    aws = step.aws
    step.hold_kube()  # the pool's nodes follow its node group until it is gone
    down = step.runs["down"] = step.run(TEARDOWN, args=run_args(step.kubeconfig))
    assert down.rc == 0, down
    step.torn_down = True
    assert aws.resources() == step.baseline
    assert_secure_teardown(aws, step.secured, down)
    # No node group: the rehearsal's pool is back at the inventory's count; the Volcano tests may go on.
    wait_until(lambda: pool_nodes(kube) == TRN_NODES, timeout=60, interval=1)
    step.release_kube()
    assert managed_versions(kube) == {}  # the platform's objects went first
    # Every wait prints progress lines, never Ansible's retry lines (issue 9).
    assert not [run for run in (step.first, *step.runs.values()) if "RETRYING" in run.output], "a wait printed FAILED - RETRYING lines"

    again = step.run(TEARDOWN, args=run_args(step.kubeconfig))
    assert again.rc == 0, again
    assert again.recap["changed"] == 0, again.changed_tasks
    assert aws.resources() == step.baseline
    # Every action of the policies requested: only when every other test of the module ran and passed (a -k run
    # leaves some stages' actions unrequested).
    every_test = {name for name, value in vars(request.module).items() if name.startswith("test_") and callable(value)}
    assert_complete = every_test - {request.node.originalname} <= step.ran
    iam_policy.assert_record_allowed(step.calls, aws, local_vars, CLUSTER, unused=assert_complete)
