# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rehearsal's AWS API: moto server and the gaps tools/rehearsal/moto_ext*.py close."""

from __future__ import annotations

import base64
import datetime
import time
import pathlib
import urllib.error
import urllib.request

import botocore.exceptions
import pytest


def test_aws_apis_answer(aws):
    assert aws.client("eks").list_clusters()["clusters"] == []
    assert aws.client("sts").get_caller_identity()["Account"].isdigit()
    zones = aws.client("ec2").describe_availability_zones()["AvailabilityZones"]
    assert "us-west-2d" in [z["ZoneName"] for z in zones]
    for service, call in (("iam", "list_roles"), ("cloudformation", "describe_stacks"), ("ecr", "describe_repositories"),
                          ("fsx", "describe_file_systems"), ("s3", "list_buckets")):
        getattr(aws.client(service), call)()
    assert aws.client("ssm").get_parameters(Names=["/nothing/here"])["InvalidParameters"] == ["/nothing/here"]


def test_fsx_file_system_goes_from_creating_to_available(aws, wait_until):
    fsx = aws.client("fsx")
    subnet = aws.client("ec2").describe_subnets()["Subnets"][0]["SubnetId"]
    created = fsx.create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[subnet],
        LustreConfiguration={"DeploymentType": "PERSISTENT_1", "PerUnitStorageThroughput": 200},
    )["FileSystem"]
    assert created["Lifecycle"] == "CREATING"
    seen = []

    def available():
        """the file system to be AVAILABLE"""
        seen.append(fsx.describe_file_systems(FileSystemIds=[created["FileSystemId"]])["FileSystems"][0]["Lifecycle"])
        return seen[-1] == "AVAILABLE"

    wait_until(available, timeout=30)
    assert seen[0] == "CREATING"


def test_eks_cluster_points_at_the_local_apiserver(aws, rehearsal):
    ca_file = pathlib.Path(rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "pki" / "ca.crt"
    assert ca_file.is_file(), "the rehearsal's Kubernetes CA is missing"
    eks = aws.client("eks")
    role = "arn:aws:iam::123456789012:role/eks"
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    created = eks.create_cluster(name="trn-rehearsal", roleArn=role, resourcesVpcConfig={"subnetIds": subnets})["cluster"]
    described = eks.describe_cluster(name="trn-rehearsal")["cluster"]
    for cluster in (created, described):
        assert cluster["endpoint"] == "https://127.0.0.1:6443"
        assert base64.b64decode(cluster["certificateAuthority"]["data"]) == ca_file.read_bytes()


def test_placement_groups_create_describe_delete(aws):
    ec2 = aws.client("ec2")
    created = ec2.create_placement_group(
        GroupName="trn-rehearsal-trn1", Strategy="cluster",
        TagSpecifications=[{"ResourceType": "placement-group", "Tags": [{"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]}],
    )["PlacementGroup"]
    assert created["GroupId"].startswith("pg-")
    assert (created["State"], created["Strategy"]) == ("available", "cluster")
    ec2.create_placement_group(GroupName="other", Strategy="partition", PartitionCount=3)
    by_name = ec2.describe_placement_groups(Filters=[{"Name": "group-name", "Values": ["trn-rehearsal-trn1"]}])["PlacementGroups"]
    assert [g["GroupId"] for g in by_name] == [created["GroupId"]]
    assert by_name[0]["Tags"] == [{"Key": "trainium.eks/cluster", "Value": "trn-rehearsal"}]
    by_tag = ec2.describe_placement_groups(Filters=[{"Name": "tag:trainium.eks/cluster", "Values": ["trn-rehearsal"]}])["PlacementGroups"]
    assert [g["GroupName"] for g in by_tag] == ["trn-rehearsal-trn1"]
    partition = ec2.describe_placement_groups(GroupNames=["other"])["PlacementGroups"][0]
    assert (partition["Strategy"], partition["PartitionCount"]) == ("partition", 3)
    assert [g["GroupName"] for g in ec2.describe_placement_groups(GroupIds=[created["GroupId"]])["PlacementGroups"]] == ["trn-rehearsal-trn1"]
    with pytest.raises(botocore.exceptions.ClientError) as duplicate:
        ec2.create_placement_group(GroupName="other", Strategy="cluster")
    assert duplicate.value.response["Error"]["Code"] == "InvalidPlacementGroup.Duplicate"
    ec2.delete_placement_group(GroupName="trn-rehearsal-trn1")
    with pytest.raises(botocore.exceptions.ClientError) as unknown:
        ec2.describe_placement_groups(GroupNames=["trn-rehearsal-trn1"])
    assert unknown.value.response["Error"]["Code"] == "InvalidPlacementGroup.Unknown"
    with pytest.raises(botocore.exceptions.ClientError) as gone:
        ec2.delete_placement_group(GroupName="trn-rehearsal-trn1")
    assert gone.value.response["Error"]["Code"] == "InvalidPlacementGroup.Unknown"


def test_placement_groups_are_cleared_by_reset(aws, rehearsal):
    aws.client("ec2").create_placement_group(GroupName="left-over", Strategy="spread")
    request = urllib.request.Request(f"{rehearsal['AWS_ENDPOINT_URL']}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass
    assert aws.client("ec2").describe_placement_groups()["PlacementGroups"] == []


@pytest.mark.parametrize("version", ["1.31", "1.32", "1.33", "1.34", "1.35"])
def test_eks_al2023_neuron_ami_parameters_point_at_registered_amis(aws, version):
    ssm, ec2 = aws.client("ssm"), aws.client("ec2")
    path = f"/aws/service/eks/optimized-ami/{version}/amazon-linux-2023/x86_64/neuron"
    # The newest release (Neuron driver 2.29, the newest the collection's driver table knows) is the recommended one.
    release = f"amazon-eks-node-al2023-x86_64-neuron-{version}-v20260714"
    recommended = ssm.get_parameter(Name=f"{path}/recommended/image_id")["Parameter"]["Value"]
    pinned = ssm.get_parameter(Name=f"{path}/{release}/image_id")["Parameter"]["Value"]
    assert recommended == pinned
    assert ssm.get_parameter(Name=f"{path}/recommended/image_name")["Parameter"]["Value"] == release
    assert ssm.get_parameter(Name=f"{path}/recommended/release_version")["Parameter"]["Value"].endswith("-20260714")
    older = {date: ssm.get_parameter(Name=f"{path}/amazon-eks-node-al2023-x86_64-neuron-{version}-v{date}/image_id")["Parameter"]["Value"]
             for date in ("20251120", "20260625")}
    assert len({recommended, *older.values()}) == 3
    image = ec2.describe_images(ImageIds=[pinned])["Images"][0]
    assert (image["Name"], image["Architecture"], image["RootDeviceName"]) == (release, "x86_64", "/dev/xvda")
    assert image["OwnerId"] == "602401143452"
    al2_gpu = ssm.get_parameters(Names=[f"/aws/service/eks/optimized-ami/{version}/amazon-linux-2-gpu/recommended/image_id"])
    assert bool(al2_gpu["Parameters"]) == (version in ("1.31", "1.32"))


def test_eks_ami_parameters_by_path_and_unknown_release(aws):
    ssm = aws.client("ssm")
    path = "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/neuron"
    names = [p["Name"] for p in ssm.get_parameters_by_path(Path=path, Recursive=True)["Parameters"]]
    for date in ("20251120", "20260625", "20260714"):
        assert f"{path}/amazon-eks-node-al2023-x86_64-neuron-1.34-v{date}/image_id" in names
    missing = f"{path}/amazon-eks-node-al2023-x86_64-neuron-1.34-v19990101/image_id"
    assert ssm.get_parameters(Names=[missing])["InvalidParameters"] == [missing]


def test_security_group_rule_description_update_answers_return(aws):
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
    group = ec2.create_security_group(GroupName="lustre", Description="t", VpcId=vpc)["GroupId"]
    permission = {"IpProtocol": "tcp", "FromPort": 988, "ToPort": 988, "UserIdGroupPairs": [{"GroupId": group, "Description": "old"}]}
    ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[permission])
    permission["UserIdGroupPairs"][0]["Description"] = "new"
    assert ec2.update_security_group_rule_descriptions_ingress(GroupId=group, IpPermissions=[permission])["Return"] is True
    assert ec2.update_security_group_rule_descriptions_egress(
        GroupId=group, IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0", "Description": "all"}]}],
    )["Return"] is True


def test_eks_cluster_gets_its_security_group_and_loses_it_with_the_cluster(aws):
    ec2, eks = aws.client("ec2"), aws.client("eks")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{i}.0/24", AvailabilityZone=f"us-west-2{z}")["Subnet"]["SubnetId"]
               for i, z in enumerate("ab")]
    eks.create_cluster(name="sg-probe", roleArn="arn:aws:iam::123456789012:role/x", resourcesVpcConfig={"subnetIds": subnets})
    config = eks.describe_cluster(name="sg-probe")["cluster"]["resourcesVpcConfig"]
    assert config["vpcId"] == vpc
    (group,) = ec2.describe_security_groups(GroupIds=[config["clusterSecurityGroupId"]])["SecurityGroups"]
    assert group["VpcId"] == vpc and group["GroupName"].startswith("eks-cluster-sg-sg-probe-")
    assert {"Key": "aws:eks:cluster-name", "Value": "sg-probe"} in group["Tags"]
    # An endpoint access update keeps the subnets and the group, as on AWS.
    eks.update_cluster_config(name="sg-probe", resourcesVpcConfig={"endpointPrivateAccess": True})
    config = eks.describe_cluster(name="sg-probe")["cluster"]["resourcesVpcConfig"]
    assert config["subnetIds"] == subnets and config["clusterSecurityGroupId"] == group["GroupId"]
    eks.delete_cluster(name="sg-probe")
    left = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["SecurityGroups"]
    assert [g["GroupName"] for g in left] == ["default"]


def test_ecr_token_and_repository_uri_point_at_the_rehearsal_registry(aws, rehearsal):
    """GetAuthorizationToken answers the registry's password for user AWS; repositoryUri is the local registry."""
    import datetime  # pylint: disable=import-outside-toplevel
    import ssl  # pylint: disable=import-outside-toplevel

    ecr = aws.client("ecr")
    uri = ecr.create_repository(repositoryName="team/bert")["repository"]["repositoryUri"]
    assert uri == f"{rehearsal['TRAINIUM_REGISTRY']}/team/bert"
    assert ecr.describe_repositories()["repositories"][0]["repositoryUri"] == uri
    data = ecr.get_authorization_token()["authorizationData"]
    assert len(data) == 1
    user, password = base64.b64decode(data[0]["authorizationToken"]).decode().split(":", 1)
    assert (user, password) == ("AWS", rehearsal["TRAINIUM_REGISTRY_PASSWORD"])
    assert data[0]["proxyEndpoint"] == rehearsal["TRAINIUM_REGISTRY_URL"]
    left = data[0]["expiresAt"] - datetime.datetime.now(datetime.timezone.utc)
    assert datetime.timedelta(hours=11, minutes=50) < left <= datetime.timedelta(hours=12, minutes=1)

    # The token is a working login: the registry lets AWS in, and nobody with another password.
    context = ssl.create_default_context(cafile=rehearsal["TRAINIUM_REGISTRY_CA_FILE"])

    def v2_status(token):
        request = urllib.request.Request(data[0]["proxyEndpoint"] + "/v2/", headers={"Authorization": f"Basic {token}"})
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    assert v2_status(data[0]["authorizationToken"]) == 200
    assert v2_status(base64.b64encode(f"AWS:{password}x".encode()).decode()) == 401


def test_creations_take_aws_time_at_the_scale_factor(aws, rehearsal, wait_until):
    """moto_ext_timing.py: with a factor in aws-time-scale, a cluster, a node group and a file system stay
    CREATING for their AWS time x factor; without one (the default) a cluster is ACTIVE at once."""
    # The state directory of the moto this test talks to: this worker's own, or the shared stack's.
    scale_file = pathlib.Path(rehearsal.get("TRAINIUM_REHEARSAL_MOTO_DIR") or rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "aws-time-scale"
    eks, ec2 = aws.client("eks"), aws.client("ec2")
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"][:2]]
    role = "arn:aws:iam::123456789012:role/eks"
    eks.create_cluster(name="trn-instant", roleArn=role, resourcesVpcConfig={"subnetIds": subnets})
    assert eks.describe_cluster(name="trn-instant")["cluster"]["status"] == "ACTIVE"
    # 600 s x 0.01 = 6 s for the cluster, 300 s -> 3 s for a node group, 480 s -> 4.8 s for a file system.
    scale_file.write_text("0.01\n", encoding="utf-8")
    try:
        started = time.monotonic()
        eks.create_cluster(name="trn-scaled", roleArn=role, resourcesVpcConfig={"subnetIds": subnets})
        eks.create_nodegroup(clusterName="trn-instant", nodegroupName="ng", subnets=subnets, nodeRole=role)
        fs_id = aws.client("fsx").create_file_system(
            FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=subnets[:1],
            LustreConfiguration={"DeploymentType": "PERSISTENT_1", "PerUnitStorageThroughput": 200})["FileSystem"]["FileSystemId"]
    finally:
        scale_file.unlink()
    # Fixed at creation: removing the file does not make them ready sooner.
    assert eks.describe_cluster(name="trn-scaled")["cluster"]["status"] == "CREATING"
    assert eks.describe_nodegroup(clusterName="trn-instant", nodegroupName="ng")["nodegroup"]["status"] == "CREATING"
    ready = {}

    def all_ready():
        """the cluster, the node group and the file system to leave CREATING"""
        now = time.monotonic() - started
        states = {
            "cluster": eks.describe_cluster(name="trn-scaled")["cluster"]["status"],
            "nodegroup": eks.describe_nodegroup(clusterName="trn-instant", nodegroupName="ng")["nodegroup"]["status"],
            "file_system": aws.client("fsx").describe_file_systems(FileSystemIds=[fs_id])["FileSystems"][0]["Lifecycle"],
        }
        for kind, state in states.items():
            if state != "CREATING" and kind not in ready:
                ready[kind] = (state, now)
        return len(ready) == 3

    wait_until(all_ready, timeout=30, interval=0.5)
    assert {kind: state for kind, (state, dummy) in ready.items()} == {"cluster": "ACTIVE", "nodegroup": "ACTIVE", "file_system": "AVAILABLE"}
    assert 5.5 <= ready["cluster"][1] < 12
    assert 2.5 <= ready["nodegroup"][1] < ready["cluster"][1]
    assert 4.3 <= ready["file_system"][1] < 12


def _refused(call, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        call(**kwargs)
    return refused.value.response["Error"]


def test_a_zone_in_eks_full_zones_refuses_create_cluster_as_eks_does(aws, rehearsal):
    """moto_ext_faults.py: a subnet in a zone listed in eks-full-zones (by name or ID) makes CreateCluster fail with
    UnsupportedAvailabilityZoneException, the region's other zones in validZones, and nothing created."""
    full_file = pathlib.Path(rehearsal.get("TRAINIUM_REHEARSAL_MOTO_DIR") or rehearsal["TRAINIUM_REHEARSAL_DIR"]) / "eks-full-zones"
    eks, ec2 = aws.client("eks"), aws.client("ec2")
    by_zone = {s["AvailabilityZone"]: s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if s.get("DefaultForAz")}
    role = "arn:aws:iam::123456789012:role/eks"
    for listed in ("us-west-2c", "usw2-az3"):
        full_file.write_text(f"{listed}\n", encoding="utf-8")
        try:
            with pytest.raises(botocore.exceptions.ClientError) as refused:
                eks.create_cluster(name="trn-full", roleArn=role, resourcesVpcConfig={"subnetIds": [by_zone["us-west-2a"], by_zone["us-west-2c"]]})
            # Outside the listed zone it is created as ever.
            eks.create_cluster(name=f"trn-room-{listed}", roleArn=role,
                               resourcesVpcConfig={"subnetIds": [by_zone["us-west-2a"], by_zone["us-west-2b"]]})
        finally:
            full_file.unlink()
        error = refused.value.response
        assert error["Error"]["Code"] == "UnsupportedAvailabilityZoneException"
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert error["validZones"] == ["us-west-2a", "us-west-2b", "us-west-2d"] and error["clusterName"] == "trn-full"
        assert error["Error"]["Message"].startswith("Cannot create cluster 'trn-full' because us-west-2c, the targeted availability zone, "
                                                    "does not currently have sufficient capacity")
    assert sorted(eks.list_clusters()["clusters"]) == ["trn-room-us-west-2c", "trn-room-usw2-az3"]
    # Without the file every zone has room again.
    eks.create_cluster(name="trn-full", roleArn=role, resourcesVpcConfig={"subnetIds": [by_zone["us-west-2a"], by_zone["us-west-2c"]]})


def test_eks_refuses_node_group_names_labels_and_taints_out_of_bounds(aws):
    """The Amazon EKS API Reference's bounds (CreateNodegroup, UpdateNodegroupConfig), sent straight to moto
    (without botocore's own check of minimum lengths, which stops an empty label value before it is sent)."""
    eks = aws.client("eks", validate=False)
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    eks.create_cluster(name="ng-rules", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": subnets})
    base = {"clusterName": "ng-rules", "nodeRole": "arn:aws:iam::123456789012:role/node", "subnets": subnets}
    # The collection's <cluster>-<pool> with a 40-character cluster and a 23-character pool: 64 characters.
    long_name = "T" + "x" * 39 + "-" + "p" * 23
    error = _refused(eks.create_nodegroup, nodegroupName=long_name, **base)
    assert error == {"Code": "InvalidParameterException", "Message": "nodeGroupName can't be longer than 63 characters!"}
    for bad in ("-starts-with-dash", "has.dot"):
        assert _refused(eks.create_nodegroup, nodegroupName=bad, **base)["Code"] == "InvalidParameterException"
    error = _refused(eks.create_nodegroup, nodegroupName="labels", labels={"team": "", "example.com/" + "a" * 52: "x"}, **base)
    assert error["Code"] == "InvalidParameterException"
    assert "Label value '' of key 'team'" in error["Message"] and "Label key 'example.com/aaa" in error["Message"]
    error = _refused(eks.create_nodegroup, nodegroupName="taints", taints=[{"key": "k" * 64, "effect": "NO_SCHEDULE"}], **base)
    assert error["Code"] == "InvalidParameterException" and "Taint key" in error["Message"]
    assert eks.list_nodegroups(clusterName="ng-rules")["nodegroups"] == []
    # At the bounds it works, and an update is held to the same rules.
    eks.create_nodegroup(nodegroupName=long_name[:63], labels={"k" * 63: "v" * 63}, **base)
    error = _refused(eks.update_nodegroup_config, clusterName="ng-rules", nodegroupName=long_name[:63],
                     labels={"addOrUpdateLabels": {"team": ""}})
    assert error["Code"] == "InvalidParameterException" and "Label value" in error["Message"]
    assert eks.list_nodegroups(clusterName="ng-rules")["nodegroups"] == [long_name[:63]]


def test_a_node_group_on_a_launch_template_that_breaks_the_efa_only_rules_fails_as_on_aws(aws):
    """EC2: an EFA-only interface is never the primary and holds no IP address; a node group whose instances could not
    launch ends CREATE_FAILED with EKS's health issue Ec2LaunchTemplateInvalidConfiguration."""
    ec2, eks = aws.client("ec2"), aws.client("eks")
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"][:2]]
    eks.create_cluster(name="efa-rules", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": subnets})
    layouts = {
        "primary-efa-only": [{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "efa-only"}],
        "efa-only-with-ip": [{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"},
                             {"NetworkCardIndex": 1, "DeviceIndex": 0, "InterfaceType": "efa-only", "SecondaryPrivateIpAddressCount": 2}],
        "ec2-layout": [{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"},
                       {"NetworkCardIndex": 0, "DeviceIndex": 1, "InterfaceType": "efa-only"},
                       {"NetworkCardIndex": 1, "DeviceIndex": 0, "InterfaceType": "efa-only"}],
    }
    found = {}
    for name, interfaces in layouts.items():
        template = ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData={"NetworkInterfaces": interfaces})["LaunchTemplate"]
        eks.create_nodegroup(clusterName="efa-rules", nodegroupName=name, nodeRole="arn:aws:iam::123456789012:role/node", subnets=subnets,
                             launchTemplate={"id": template["LaunchTemplateId"], "version": "1"})
        group = eks.describe_nodegroup(clusterName="efa-rules", nodegroupName=name)["nodegroup"]
        found[name] = (group["status"], [(i["code"], i["message"]) for i in group.get("health", {}).get("issues", [])])
    assert found["ec2-layout"] == ("ACTIVE", [])
    assert found["primary-efa-only"] == ("CREATE_FAILED", [(
        "Ec2LaunchTemplateInvalidConfiguration",
        "An EFA-only network interface cannot be the primary network interface (network card index 0, device index 0)")])
    assert found["efa-only-with-ip"] == ("CREATE_FAILED", [(
        "Ec2LaunchTemplateInvalidConfiguration",
        "The EFA-only network interface at network card index 1, device index 0 has IP addresses; "
        "EFA-only network interfaces do not support IP addresses")])


def test_a_capacity_block_node_group_and_its_launch_template_go_together(aws):
    """EKS: capacity type CAPACITY_BLOCK with a launch template of market type capacity-block, and only then."""
    ec2, eks = aws.client("ec2"), aws.client("eks")
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"][:2]]
    eks.create_cluster(name="cb-rules", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": subnets})
    block = {"InstanceMarketOptions": {"MarketType": "capacity-block"},
             "CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}}}
    templates = {name: ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=data)["LaunchTemplate"]["LaunchTemplateId"]
                 for name, data in (("block", block), ("plain", {"InstanceType": "trn1.32xlarge"}))}
    base = {"clusterName": "cb-rules", "nodeRole": "arn:aws:iam::123456789012:role/node", "subnets": subnets}
    error = _refused(eks.create_nodegroup, nodegroupName="a", capacityType="CAPACITY_BLOCK", launchTemplate={"id": templates["plain"]}, **base)
    assert error["Code"] == "InvalidParameterException" and "requires a launch template with InstanceMarketOptions MarketType" in error["Message"]
    error = _refused(eks.create_nodegroup, nodegroupName="b", capacityType="ON_DEMAND", launchTemplate={"id": templates["block"]}, **base)
    assert error == {"Code": "InvalidParameterException",
                     "Message": "A launch template with MarketType capacity-block requires capacity type CAPACITY_BLOCK, not ON_DEMAND"}
    eks.create_nodegroup(nodegroupName="c", capacityType="CAPACITY_BLOCK", launchTemplate={"id": templates["block"]}, **base)
    assert eks.list_nodegroups(clusterName="cb-rules")["nodegroups"] == ["c"]


def test_a_capacity_block_is_bought_follows_the_clock_and_launches_nodes_only_while_active(aws):
    """moto_ext_ec2.py: DescribeCapacityBlockOfferings/PurchaseCapacityBlock make a capacity-block reservation, scheduled
    before its start and active after (EC2 User Guide, "Capacity Blocks for ML"); moto_ext_eks_rules.py: its node group
    launches nothing before the start, AsgInstanceLaunchFailures, and is healthy at desired size 0 (EKS User Guide)."""
    ec2, eks = aws.client("ec2"), aws.client("eks")
    now = datetime.datetime.now(datetime.timezone.utc)
    assert _refused(ec2.describe_capacity_block_offerings, InstanceType="trn1.32xlarge", InstanceCount=2,
                    CapacityDurationHours=25)["Code"] == "InvalidParameterValue"
    assert ec2.describe_capacity_block_offerings(InstanceType="m5.large", InstanceCount=1, CapacityDurationHours=24)["CapacityBlockOfferings"] == []
    blocks = {}
    for name, hours in (("later", 30), ("started", -1)):
        offerings = ec2.describe_capacity_block_offerings(InstanceType="trn1.32xlarge", InstanceCount=2, CapacityDurationHours=48,
                                                          StartDateRange=now + datetime.timedelta(hours=hours))["CapacityBlockOfferings"]
        # Only zones that offer the type (the rehearsal's trn1.32xlarge: us-west-2b and us-west-2d).
        assert sorted(o["AvailabilityZone"] for o in offerings) == ["us-west-2b", "us-west-2d"], offerings
        assert all((o["EndDate"] - o["StartDate"]).total_seconds() == 48 * 3600 for o in offerings)
        bought = ec2.purchase_capacity_block(CapacityBlockOfferingId=offerings[0]["CapacityBlockOfferingId"], InstancePlatform="Linux/UNIX")
        blocks[name] = bought["CapacityReservation"]["CapacityReservationId"]
        assert _refused(ec2.purchase_capacity_block, CapacityBlockOfferingId=offerings[0]["CapacityBlockOfferingId"],
                        InstancePlatform="Linux/UNIX")["Code"] == "InvalidCapacityBlockOfferingId.NotFound"
    found = {r["CapacityReservationId"]: r for r in ec2.describe_capacity_reservations(Filters=[
        {"Name": "reservation-type", "Values": ["capacity-block"]}])["CapacityReservations"]}
    assert (found[blocks["later"]]["State"], found[blocks["started"]]["State"]) == ("scheduled", "active")
    assert found[blocks["later"]]["EndDateType"] == "limited" and found[blocks["later"]]["TotalInstanceCount"] == 2

    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"][:2]]
    eks.create_cluster(name="cb-clock", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": subnets})

    def group(name, block, desired):
        data = {"InstanceMarketOptions": {"MarketType": "capacity-block"},
                "CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": blocks[block]}}}
        template = ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=data)["LaunchTemplate"]["LaunchTemplateId"]
        eks.create_nodegroup(clusterName="cb-clock", nodegroupName=name, nodeRole="arn:aws:iam::123456789012:role/node", subnets=subnets,
                             capacityType="CAPACITY_BLOCK", launchTemplate={"id": template},
                             scalingConfig={"minSize": 0, "maxSize": 2, "desiredSize": desired})
        return state(name)

    def state(name):
        answer = eks.describe_nodegroup(clusterName="cb-clock", nodegroupName=name)["nodegroup"]
        return answer["status"], [i["code"] for i in answer.get("health", {}).get("issues", [])]

    assert group("early", "later", 2) == ("CREATE_FAILED", ["AsgInstanceLaunchFailures"])
    assert group("waiting", "later", 0) == ("ACTIVE", [])
    assert group("running", "started", 2) == ("ACTIVE", [])
    eks.update_nodegroup_config(clusterName="cb-clock", nodegroupName="waiting", scalingConfig={"minSize": 0, "maxSize": 2, "desiredSize": 1})
    assert state("waiting") == ("DEGRADED", ["AsgInstanceLaunchFailures"])
    eks.update_nodegroup_config(clusterName="cb-clock", nodegroupName="waiting", scalingConfig={"minSize": 0, "maxSize": 2, "desiredSize": 0})
    assert state("waiting") == ("ACTIVE", [])


def test_the_upgrade_policy_is_kept_reported_and_changed_as_eks_documents(aws):
    eks = aws.client("eks", validate=False)
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    base = {"roleArn": "arn:aws:iam::123456789012:role/eks", "resourcesVpcConfig": {"subnetIds": subnets}}
    eks.create_cluster(name="policy", upgradePolicy={"supportType": "STANDARD"}, **base)
    assert eks.describe_cluster(name="policy")["cluster"]["upgradePolicy"] == {"supportType": "STANDARD"}
    update = eks.update_cluster_config(name="policy", upgradePolicy={"supportType": "EXTENDED"})["update"]
    assert update["type"] == "UpgradePolicyUpdate" and update["status"] == "Successful"
    assert eks.describe_cluster(name="policy")["cluster"]["upgradePolicy"] == {"supportType": "EXTENDED"}
    for call, kwargs in ((eks.create_cluster, dict(name="bad", upgradePolicy={"supportType": "FOREVER"}, **base)),
                         (eks.update_cluster_config, dict(name="policy", upgradePolicy={"supportType": "FOREVER"}))):
        assert _refused(call, **kwargs)["Code"] == "InvalidParameterException"
    # Not given: not reported (the API reference does not say what EKS reports then).
    eks.create_cluster(name="plain", **base)
    assert "upgradePolicy" not in eks.describe_cluster(name="plain")["cluster"]


def test_cluster_versions_follow_eks_calendar_and_extended_support_cannot_be_left_for_standard(aws):
    """DescribeClusterVersions (moto_ext_eks_versions.py) from EKS's release calendar; no STANDARD policy for a cluster
    in extended support (EKS User Guide, "Disable EKS extended support"), InvalidRequestException."""
    eks = aws.client("eks")
    listed = eks.describe_cluster_versions()["clusterVersions"]
    # 14 months of standard support, then 12 of extended (EKS User Guide, "Kubernetes version lifecycle").
    for info in listed:
        standard, extended = info["endOfStandardSupportDate"], info["endOfExtendedSupportDate"]
        assert 13 <= (standard - info["releaseDate"]).days / 30.4 <= 15 and 11 <= (extended - standard).days / 30.4 <= 13, info
        assert info["versionStatus"] != "UNSUPPORTED" and info["status"] == info["versionStatus"].lower().replace("_", "-"), info
    assert {"1.35"} <= {i["clusterVersion"] for i in listed if i["versionStatus"] == "STANDARD_SUPPORT"}, listed
    extended = [i["clusterVersion"] for i in listed if i["versionStatus"] == "EXTENDED_SUPPORT"]
    assert extended, f"no version in extended support on {datetime.date.today()}: update moto_ext_eks_versions.VERSIONS"
    one = eks.describe_cluster_versions(clusterVersions=[extended[0]])["clusterVersions"]
    assert [i["clusterVersion"] for i in one] == [extended[0]]
    assert [i["clusterVersion"] for i in eks.describe_cluster_versions(defaultOnly=True)["clusterVersions"]] == ["1.35"]

    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    base = {"roleArn": "arn:aws:iam::123456789012:role/eks", "resourcesVpcConfig": {"subnetIds": subnets}}
    eks.create_cluster(name="old", version=extended[0], upgradePolicy={"supportType": "EXTENDED"}, **base)
    error = _refused(eks.update_cluster_config, name="old", upgradePolicy={"supportType": "STANDARD"})
    assert error["Code"] == "InvalidRequestException" and "extended support" in error["Message"], error
    assert eks.describe_cluster(name="old")["cluster"]["upgradePolicy"] == {"supportType": "EXTENDED"}
    # A version in standard support moves either way.
    eks.create_cluster(name="new", version="1.35", upgradePolicy={"supportType": "EXTENDED"}, **base)
    assert eks.update_cluster_config(name="new", upgradePolicy={"supportType": "STANDARD"})["update"]["status"] == "Successful"


def test_a_control_plane_moves_one_minor_version_up_at_a_time(aws):
    """UpdateClusterVersion (moto_ext_eks_versions.py), which moto lacks: one minor up to a supported version, read back
    by DescribeCluster and DescribeUpdate (EKS User Guide, "Update existing cluster to new Kubernetes version")."""
    eks = aws.client("eks")
    subnets = [s["SubnetId"] for s in aws.client("ec2").describe_subnets()["Subnets"][:2]]
    eks.create_cluster(name="up", version="1.34", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": subnets})
    for wanted in ("1.36", "1.33", "1.34", "1.29", "2.0"):
        error = _refused(eks.update_cluster_version, name="up", version=wanted)
        assert error["Code"] == "InvalidParameterException" and wanted in error["Message"], (wanted, error)
    assert _refused(eks.update_cluster_version, name="nobody", version="1.35")["Code"] == "ResourceNotFoundException"
    update = eks.update_cluster_version(name="up", version="1.35")["update"]
    assert update["type"] == "VersionUpdate" and update["status"] == "Successful"
    assert {"type": "Version", "value": "1.35"} in update["params"]
    assert eks.describe_update(name="up", updateId=update["id"])["update"]["id"] == update["id"]
    assert eks.describe_cluster(name="up")["cluster"]["version"] == "1.35"


def test_a_node_group_version_update_follows_eks_rules_and_on_a_capacity_block_needs_desired_size_0(aws):
    """UpdateNodegroupVersion (moto_ext_eks_rules.py): the template it was created with, a version that template has,
    never back; on a Capacity Block only at desired size 0 (EKS User Guide). DescribeUpdate reads the update."""
    ec2, eks = aws.client("ec2"), aws.client("eks")
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"][:2]]
    eks.create_cluster(name="ver-rules", version="1.35", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": subnets})
    block = {"InstanceMarketOptions": {"MarketType": "capacity-block"},
             "CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef1"}}}
    template = ec2.create_launch_template(LaunchTemplateName="ver-block", LaunchTemplateData=block)["LaunchTemplate"]["LaunchTemplateId"]
    other = ec2.create_launch_template(LaunchTemplateName="ver-other", LaunchTemplateData=block)["LaunchTemplate"]["LaunchTemplateId"]
    ec2.create_launch_template_version(LaunchTemplateId=template, LaunchTemplateData=dict(block, UserData="IyEvYmluL3NoCg=="))
    base = {"clusterName": "ver-rules", "nodeRole": "arn:aws:iam::123456789012:role/node", "subnets": subnets}
    eks.create_nodegroup(nodegroupName="block", capacityType="CAPACITY_BLOCK", launchTemplate={"id": template, "version": "1"}, version="1.35",
                         scalingConfig={"minSize": 1, "maxSize": 2, "desiredSize": 2}, **base)
    eks.create_nodegroup(nodegroupName="plain", version="1.35", **base)
    update = {"clusterName": "ver-rules", "nodegroupName": "block"}
    error = _refused(eks.update_nodegroup_version, launchTemplate={"id": template, "version": "2"}, **update)
    assert error == {"Code": "InvalidRequestException",
                     "Message": "Nodegroup block uses a Capacity Block; set its desired size to 0 before a version update (it is 2)"}
    assert eks.describe_nodegroup(**update)["nodegroup"]["launchTemplate"]["version"] == "1"
    eks.update_nodegroup_config(scalingConfig={"minSize": 0, "maxSize": 2, "desiredSize": 0}, **update)
    for wrong, code, words in (({"id": other, "version": "1"}, "InvalidParameterException", "must be the one the node group was created with"),
                               ({"id": template, "version": "7"}, "InvalidParameterException", f"{template} has no version 7")):
        error = _refused(eks.update_nodegroup_version, launchTemplate=wrong, **update)
        assert error["Code"] == code and words in error["Message"], error
    error = _refused(eks.update_nodegroup_version, clusterName="ver-rules", nodegroupName="plain", launchTemplate={"id": template, "version": "2"})
    assert error["Code"] == "InvalidRequestException" and "originally deployed with a launch template" in error["Message"]
    error = _refused(eks.update_nodegroup_version, clusterName="ver-rules", nodegroupName="plain", version="1.34")
    assert error["Code"] == "InvalidParameterException" and "never back" in error["Message"]
    answer = eks.update_nodegroup_version(launchTemplate={"id": template, "version": "2"}, **update)["update"]
    assert (answer["type"], answer["status"]) == ("VersionUpdate", "Successful")
    assert eks.describe_update(name="ver-rules", updateId=answer["id"], nodegroupName="block")["update"]["params"] == [
        {"type": "LaunchTemplateVersion", "value": "2"}]
    group = eks.describe_nodegroup(**update)["nodegroup"]
    assert (group["launchTemplate"]["version"], group["scalingConfig"]["desiredSize"]) == ("2", 0)


def test_a_node_group_larger_than_its_subnets_free_addresses_fails_as_eks_reports_it(aws):
    """A /28 holds 11 addresses: 12 nodes cannot all get a primary address (EKS health issue InsufficientFreeAddresses),
    at creation (CREATE_FAILED) or when a group grows past it (DEGRADED, healthy again once back within)."""
    ec2, eks = aws.client("ec2"), aws.client("eks")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    small = [ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
             for cidr, zone in (("10.9.0.0/28", "us-west-2a"), ("10.9.1.0/28", "us-west-2b"))]
    eks.create_cluster(name="ip-rules", roleArn="arn:aws:iam::123456789012:role/eks", resourcesVpcConfig={"subnetIds": small})
    base = {"clusterName": "ip-rules", "nodeRole": "arn:aws:iam::123456789012:role/node", "subnets": small[:1]}
    eks.create_nodegroup(nodegroupName="too-big", scalingConfig={"minSize": 12, "maxSize": 12, "desiredSize": 12}, **base)
    eks.create_nodegroup(nodegroupName="fits", scalingConfig={"minSize": 11, "maxSize": 12, "desiredSize": 11}, **base)
    groups = {name: eks.describe_nodegroup(clusterName="ip-rules", nodegroupName=name)["nodegroup"] for name in ("too-big", "fits")}
    assert groups["too-big"]["status"] == "CREATE_FAILED"
    assert groups["too-big"]["health"]["issues"] == [{
        "code": "InsufficientFreeAddresses", "resourceIds": small[:1],
        "message": "One or more of the subnets associated with your managed node group does not have enough available IP addresses for new nodes."}]
    assert (groups["fits"]["status"], groups["fits"]["health"]["issues"]) == ("ACTIVE", [])
    eks.update_nodegroup_config(clusterName="ip-rules", nodegroupName="fits", scalingConfig={"minSize": 11, "maxSize": 12, "desiredSize": 12})
    grown = eks.describe_nodegroup(clusterName="ip-rules", nodegroupName="fits")["nodegroup"]
    assert (grown["status"], [i["code"] for i in grown["health"]["issues"]]) == ("DEGRADED", ["InsufficientFreeAddresses"])
    eks.update_nodegroup_config(clusterName="ip-rules", nodegroupName="fits", scalingConfig={"minSize": 1, "maxSize": 12, "desiredSize": 2})
    back = eks.describe_nodegroup(clusterName="ip-rules", nodegroupName="fits")["nodegroup"]
    assert (back["status"], back["health"]["issues"]) == ("ACTIVE", [])
