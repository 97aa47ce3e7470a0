# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/preflight.yml on the local inventory, against moto server.

Every bad input must stop the play with a message that names the variable,
the value and what is allowed, and leave the account exactly as it was.
"""

from __future__ import annotations

import copy
import datetime

import pytest

PREFLIGHT = "playbooks/preflight.yml"
LOOKUP_TASK = "Look up the zones and figures of the Trainium instance types"


def with_change(base, path, value):
    """A deep copy of the deployment variables with one value changed (or removed, for value=DELETE)."""
    data = copy.deepcopy(base)
    keys = path.split(".")
    target = data
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    last = int(keys[-1]) if isinstance(target, list) else keys[-1]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return data


DELETE = object()


def test_preflight_places_pools_and_changes_nothing(aws, run_playbook):
    before = aws.resources()
    result = run_playbook(PREFLIGHT)
    assert result.rc == 0, result
    assert result.recap["changed"] == 0
    assert "trn1: 2 x trn1.32xlarge in us-west-2b" in result.text
    assert "16 Neuron devices / 32 NeuronCores / 8 EFA interfaces per node; offered in us-west-2b, us-west-2d" in result.text
    assert aws.resources() == before


def test_preflight_check_mode_reports_no_change(aws, run_playbook):
    # A plain run reporting no change is test_preflight_places_pools_and_changes_nothing.
    result = run_playbook(PREFLIGHT, args=("--check", "--diff"))
    assert result.rc == 0, result
    assert result.recap["changed"] == 0


def test_site_yml_runs_preflight_by_tag(aws, run_playbook):
    result = run_playbook("site.yml", args=("--tags", "preflight"))
    assert result.rc == 0, result
    assert "trainium.eks.preflight : Show where each node pool goes" in result.output


NO_PLACEMENT_GROUPS = {"trn_launch_template_placement_groups": False}


def test_reservation_fixes_the_zone(aws, run_playbook, local_vars):
    reservation = aws.client("ec2").create_capacity_reservation(
        InstanceType="trn1.32xlarge", InstancePlatform="Linux/UNIX", AvailabilityZone="us-west-2d",
        InstanceCount=2, InstanceMatchCriteria="targeted",
    )["CapacityReservation"]["CapacityReservationId"]
    variables = with_change(local_vars, "trainium_node_pools.0.capacity_reservation_id", reservation)
    # A pool with a reservation goes without the collection's placement group (docs/validation.md).
    result = run_playbook(PREFLIGHT, extra_vars={"trainium_node_pools": variables["trainium_node_pools"], **NO_PLACEMENT_GROUPS})
    assert result.rc == 0, result
    assert "trn1: 2 x trn1.32xlarge in us-west-2d" in result.text


def test_reservation_with_the_collections_placement_group_is_refused_before_any_call(aws, run_playbook, local_vars):
    variables = with_change(local_vars, "trainium_node_pools.0.capacity_reservation_id", "cr-0123456789abcdef0")
    result = run_playbook(PREFLIGHT, extra_vars={"trainium_node_pools": variables["trainium_node_pools"]})
    assert result.rc != 0, result
    assert "trn_launch_template_placement_groups: got True (bool); allowed: false while trainium_node_pools[0] targets" in result.text
    assert "PLAY [Preflight" not in result.output


def test_pinned_zone_by_id(aws, run_playbook, local_vars):
    zones = {z["ZoneName"]: z["ZoneId"] for z in aws.client("ec2").describe_availability_zones()["AvailabilityZones"]}
    variables = with_change(local_vars, "trainium_node_pools.0.availability_zone", zones["us-west-2d"])
    result = run_playbook(PREFLIGHT, extra_vars={"trainium_node_pools": variables["trainium_node_pools"]})
    assert result.rc == 0, result
    assert f"in us-west-2d ({zones['us-west-2d']})" in result.text


# (case id, variable path, bad value, fragments the message must hold)
# All of these are caught before any cloud call.
STATIC_CASES = [
    ("cluster-name-underscore", "trainium_cluster_name", "trn_bert", ["trainium_cluster_name: got 'trn_bert'", "letters, digits and '-'"]),
    ("cluster-name-too-long", "trainium_cluster_name", "t" * 41, ["trainium_cluster_name: got 't", "2-40 letters"]),
    ("endpoint-without-scheme", "trainium_aws_endpoint_url", "127.0.0.1:5000",
     ["trainium_aws_endpoint_url: got '127.0.0.1:5000'", "an http(s) URL"]),
    ("region-typo", "trainium_region", "us-west2", ["trainium_region: got 'us-west2'", "AWS region name"]),
    ("k8s-version-unsupported", "trainium_kubernetes_version", "1.25", ["trainium_kubernetes_version", "1.25", "1.31, 1.32, 1.33, 1.34, 1.35"]),
    ("pools-empty", "trainium_node_pools", [], ["trainium_node_pools: got [] (list)", "a list of 1 to 10 node pools"]),
    ("pool-type-not-trainium", "trainium_node_pools.0.instance_type", "p4d.24xlarge", ["instance_type", "p4d.24xlarge", "trn1.32xlarge"]),
    ("pool-count-negative", "trainium_node_pools.0.count", -1, ["trainium_node_pools[0].count: got -1 (int)", "an integer from 0 to 100"]),
    ("pool-count-too-big", "trainium_node_pools.0.count", 101, ["trainium_node_pools[0].count: got 101 (int)", "an integer from 0 to 100"]),
    ("pool-max-below-count", "trainium_node_pools.0.max_count", 1, ["trainium_node_pools[0].max_count: got 1 (int)", "an integer from 2 to 100"]),
    ("pool-capacity-type", "trainium_node_pools.0.capacity_type", "RESERVED", ["capacity_type", "RESERVED", "ON_DEMAND, SPOT, CAPACITY_BLOCK"]),
    ("pool-capacity-block-without-id", "trainium_node_pools.0.capacity_type", "CAPACITY_BLOCK",
     ["trainium_node_pools[0].capacity_reservation_id: got None", "the id of the capacity block"]),
    ("pool-reservation-id-malformed", "trainium_node_pools.0.capacity_reservation_id", "reservation-1",
     ["trainium_node_pools[0].capacity_reservation_id: got 'reservation-1'", "cr-0123456789abcdef0"]),
    ("pool-zone-malformed", "trainium_node_pools.0.availability_zone", "west", ["trainium_node_pools[0].availability_zone: got 'west'", "usw2-az4"]),
    ("pool-root-volume-small", "trainium_node_pools.0.root_volume_size_gib", 20,
     ["trainium_node_pools[0].root_volume_size_gib: got 20 (int)", "an integer from 100 to 16384"]),
    ("pool-label-value", "trainium_node_pools.0.labels", {"team": "ml platform"}, ["trainium_node_pools[0].labels[team]: got 'ml platform'", "label value"]),
    ("fsx-capacity", "trainium_storage.storage_capacity_gib", 1300,
     ["trainium_storage.storage_capacity_gib: got 1300 (int)", "1200, 2400 or a multiple of 2400"]),
    ("fsx-throughput", "trainium_storage.per_unit_storage_throughput", 125,
     ["trainium_storage.per_unit_storage_throughput: got 125 (int)", "one of 50, 100, 200 (MB/s/TiB) for PERSISTENT_1"]),
    ("fsx-type", "trainium_storage.deployment_type", "SCRATCH_1", ["deployment_type", "SCRATCH_1", "SCRATCH_2, PERSISTENT_1, PERSISTENT_2"]),
    ("fsx-s3-path", "trainium_storage.data_repository_path", "https://bucket/x", ["trainium_storage.data_repository_path: got 'https://bucket/x'", "S3 URL"]),
    ("image-tag-latest", "trainium_image.tag", "latest", ["trainium_image.tag: got 'latest'", "'latest' is not allowed"]),
    ("image-base-unpinned", "trainium_image.base_image", "public.ecr.aws/neuron/pytorch-training-neuronx",
     ["trainium_image.base_image: got 'public.ecr.aws/neuron/pytorch-training-neuronx'", "pinned by a version tag or a digest"]),
    ("image-repo-uppercase", "trainium_image.repository", "BERT", ["trainium_image.repository: got 'BERT'", "ECR repository name"]),
    ("dataset-source", "trainium_dataset.source", "/tmp/data", ["trainium_dataset.source: got '/tmp/data'", "'synthetic' or an S3 URL"]),
    ("dataset-seq-len", "trainium_dataset.seq_len", 256, ["seq_len", "256", "128, 512"]),
    ("job-unknown-pool", "trainium_job.node_pool", "trn2", ["trainium_job.node_pool: got 'trn2'", "one of trn1"]),
    ("job-nnodes-zero", "trainium_job.nnodes", 0, ["trainium_job.nnodes: got 0 (int)", "an integer from 1 to 1000"]),
    ("job-name-uppercase", "trainium_job.name", "BERT", ["trainium_job.name: got 'BERT'", "lowercase letters"]),
    ("job-precision", "trainium_job.precision", "fp16", ["precision", "fp16", "bf16, fp32"]),
    ("job-max-retry", "trainium_job.max_retry", 11, ["trainium_job.max_retry: got 11 (int)", "an integer from 0 to 10"]),
    # The training tracks (docs/training.md, "Two tracks"): TorchNeuron is not for trn1; a trn2 pool runs it by default,
    # and the inventory's base image is PyTorch/XLA's (the rehearsal's stand-in names Neuron SDK 2.29 in its tag).
    ("job-native-on-trn1", "trainium_job.framework", "native",
     ["trainium_job.framework: got 'native' (str); allowed: xla on trn1.32xlarge, or unset for xla: TorchNeuron, the native track, "
      "runs on Trainium2 and Trainium3 only"]),
    ("pool-trn2-with-the-xla-image", "trainium_node_pools.0.instance_type", "trn2.48xlarge",
     ["trainium_image.base_image: got '", "allowed: an image of TorchNeuron, the native track (Neuron SDK 2.33 or later, PyTorch 2.13 "
      "or later); this one is PyTorch/XLA's (Neuron SDK 2.29)"]),
    ("pool-unknown-key", "trainium_node_pools.0.instance_typo", "trn1.32xlarge", ["instance_typo"]),
]


def _related(a, b):
    """Two paths that change the same value, or one a part of the other (pools-empty and a pool's field)."""
    a, b = a.split("."), b.split(".")
    return a[:len(b)] == b or b[:len(a)] == a


# Checks that another change in the same run hides: a bad deployment type leaves the
# throughput unchecked, a capacity block's missing id needs the type it names, the
# pools a job may name and the counts a max_count may take come from the pools.
HIDES = {"fsx-type": {"fsx-throughput"}, "pool-capacity-type": {"pool-capacity-block-without-id"},
         "pools-empty": {"job-unknown-pool", "job-native-on-trn1"}, "pool-count-negative": {"pool-max-below-count"},
         "pool-count-too-big": {"pool-max-below-count"}, "job-native-on-trn1": {"pool-trn2-with-the-xla-image"},
         "image-base-unpinned": {"pool-trn2-with-the-xla-image"},
         "job-unknown-pool": {"job-native-on-trn1", "pool-trn2-with-the-xla-image"}}


# A key no pool may have is reported when the pool's other keys are good.
ALONE_IN_ITS_POOL = {"pool-unknown-key"}


def _clash(case, other):
    if _related(case[1], other[1]) or other[0] in HIDES.get(case[0], ()) or case[0] in HIDES.get(other[0], ()):
        return True
    in_pool = case[1].startswith("trainium_node_pools.") and other[1].startswith("trainium_node_pools.")
    return in_pool and bool({case[0], other[0]} & ALONE_IN_ITS_POOL)


def _packed(cases):
    """The cases in as few runs as can hold them: no two changes of one run touch the same value or hide each other."""
    runs = []
    for case in cases:
        for run in runs:
            if not any(_clash(case, other) for other in run):
                run.append(case)
                break
        else:
            runs.append([case])
    return runs


STATIC_RUNS = _packed(STATIC_CASES)


@pytest.mark.parametrize("cases", STATIC_RUNS, ids=[f"{len(r)}-problems-from-{r[0][0]}" for r in STATIC_RUNS])
def test_bad_input_stops_before_any_cloud_call(aws, run_playbook, local_vars, cases):
    """Each run sets several bad values at once (STATIC_CASES, packed so that no two touch the same value): the
    validation pass names every one of them, one line each, in the same run, and stops it before any AWS call."""
    before = aws.resources()
    variables = copy.deepcopy(local_vars)
    for _case, path, value, _fragments in cases:
        variables = with_change(variables, path, value)
    tops = {path.split(".")[0] for _case, path, _value, _fragments in cases}
    result = run_playbook(PREFLIGHT, extra_vars={top: variables[top] for top in tops})
    assert result.rc != 0, result
    assert result.recap["failed"] == 1
    for case, _path, _value, fragments in cases:
        for fragment in fragments:
            assert fragment in result.text, f"{case}: {fragment!r} not in output:\n{result.output[-3000:]}"
    assert LOOKUP_TASK not in result.text, "the AWS lookup ran although the input was invalid"
    assert aws.resources() == before


def test_static_cases_are_packed_without_overlap():
    assert sorted(case for run in STATIC_RUNS for case in run) == sorted(STATIC_CASES)
    for run in STATIC_RUNS:
        for index, case in enumerate(run):
            assert not any(_clash(case, other) for other in run[index + 1:]), run
    assert len(STATIC_RUNS) < len(STATIC_CASES) / 4


def _reservation(aws, instance_type="trn1.32xlarge", count=1, zone="us-west-2d"):
    return aws.client("ec2").create_capacity_reservation(
        InstanceType=instance_type, InstancePlatform="Linux/UNIX", AvailabilityZone=zone, InstanceCount=count,
    )["CapacityReservation"]["CapacityReservationId"]


def _capacity_block(aws, starts_in_hours, zone="us-west-2d", count=2):
    """A Capacity Block bought from the rehearsal's offerings: scheduled when it starts later, active when it started."""
    ec2 = aws.client("ec2")
    start = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=starts_in_hours)
    offerings = ec2.describe_capacity_block_offerings(InstanceType="trn1.32xlarge", InstanceCount=count, CapacityDurationHours=48,
                                                      StartDateRange=start)["CapacityBlockOfferings"]
    offering = next(o for o in offerings if o["AvailabilityZone"] == zone)
    return ec2.purchase_capacity_block(CapacityBlockOfferingId=offering["CapacityBlockOfferingId"],
                                       InstancePlatform="Linux/UNIX")["CapacityReservation"]["CapacityReservationId"]


def _cancelled_reservation(aws):
    reservation = _reservation(aws)
    aws.client("ec2").cancel_capacity_reservation(CapacityReservationId=reservation)
    return reservation


# (case id, how to build the bad variables from a clean account, fragments)
# These need the EC2 facts, so they are caught after the read-only lookup.
CAPACITY_CASES = [
    # On the xla track, as the inventory's base image is PyTorch/XLA's.
    ("no-zone-offers-type", lambda aws, v: (_set_pool(v, instance_type="trn2.48xlarge", count=1), v["trainium_job"].update(framework="xla")),
     ["trainium_node_pools[0].instance_type: got 'trn2.48xlarge'", "no zone of us-west-2 offers trn2.48xlarge; it is offered in ",
      "(set trainium_region to one of them)"]),
    ("pinned-zone-does-not-offer", lambda aws, v: _set_pool(v, availability_zone="us-west-2a"),
     ["trainium_node_pools[0].availability_zone: got 'us-west-2a'", "a zone that offers trn1.32xlarge: us-west-2b", "us-west-2d"]),
    ("more-nodes-than-reservation", lambda aws, v: _set_pool(v, capacity_reservation_id=_reservation(aws, count=1)),
     ["trainium_node_pools[0].count: got 2 (int)", "at most 1, the number of instances reservation cr-"]),
    ("reservation-not-found", lambda aws, v: _set_pool(v, capacity_reservation_id="cr-0123456789abcdef0"),
     ["trainium_node_pools[0].capacity_reservation_id: got 'cr-0123456789abcdef0'", "none with this id was found"]),
    ("reservation-other-type", lambda aws, v: _set_pool(v, capacity_reservation_id=_reservation(aws, "trn1n.32xlarge", 4)),
     ["a reservation for trn1.32xlarge; this one holds trn1n.32xlarge"]),
    ("reservation-cancelled", lambda aws, v: _set_pool(v, capacity_reservation_id=_cancelled_reservation(aws)),
     ["a reservation in state active or scheduled; this one is cancelled"]),
    ("block-not-started", lambda aws, v: _set_pool(v, capacity_type="CAPACITY_BLOCK", capacity_reservation_id=_capacity_block(aws, 30)),
     ["trainium_node_pools[0].capacity_reservation_id: got 'cr-", "allowed: a reservation that has started;",
      "is scheduled and starts at 20", "run again once it is active"]),
    ("block-needs-capacity-block-type", lambda aws, v: _set_pool(v, capacity_reservation_id=_capacity_block(aws, -1)),
     ["trainium_node_pools[0].capacity_type: got 'ON_DEMAND'", "allowed: CAPACITY_BLOCK, since cr-", "is a Capacity Block for ML"]),
    ("quota-on-demand", lambda aws, v: _set_pool(v, count=5),
     ["trainium_node_pools: got 5 x trn1.32xlarge ON_DEMAND = 640 vCPUs; allowed: at most 512 vCPUs, the EC2 quota "
      "'Running On-Demand Trn instances' (L-2C3B7624) of 512 vCPUs in us-west-2 minus 0 used by other Trainium instances",
      "--quota-code L-2C3B7624 --desired-value 640 --region us-west-2"]),
    ("quota-spot", lambda aws, v: _set_pool(v, capacity_type="SPOT"),
     ["trainium_node_pools: got 2 x trn1.32xlarge SPOT = 256 vCPUs; allowed: at most 0 vCPUs, the EC2 quota 'All Trn Spot Instance Requests'"]),
    ("job-more-nodes-than-pool", lambda aws, v: v["trainium_job"].update(nnodes=3),
     ["trainium_job.nnodes: got 3 (int)", "at most 2, the node count of pool 'trn1'"]),
    ("job-more-workers-than-cores", lambda aws, v: v["trainium_job"].update(nproc_per_node=64),
     ["trainium_job.nproc_per_node: got 64 (int)", "at most 32, the NeuronCores of one trn1.32xlarge"]),
    ("small-type-cores", lambda aws, v: (_set_pool(v, instance_type="trn1.2xlarge"), v["trainium_job"].update(nproc_per_node=4)),
     ["trainium_job.nproc_per_node: got 4 (int)", "at most 2, the NeuronCores of one trn1.2xlarge"]),
]


def _set_pool(variables, **changes):
    variables["trainium_node_pools"][0].update(changes)


@pytest.mark.parametrize("mutate,fragments", [c[1:] for c in CAPACITY_CASES], ids=[c[0] for c in CAPACITY_CASES])
def test_capacity_problem_stops_before_anything_is_created(aws, run_playbook, local_vars, mutate, fragments):
    variables = copy.deepcopy(local_vars)
    mutate(aws, variables)
    before = aws.resources()
    result = run_playbook(PREFLIGHT, extra_vars={**{k: variables[k] for k in ("trainium_node_pools", "trainium_job")}, **NO_PLACEMENT_GROUPS})
    assert result.rc != 0, result
    assert result.recap["failed"] == 1
    for fragment in fragments:
        assert fragment in result.text, f"{fragment!r} not in output:\n{result.output[-3000:]}"
    assert aws.resources() == before
    assert aws.resources()["eks_clusters"] == [] and aws.resources()["launch_templates"] == []


def test_quota_counts_the_trainium_instances_others_run(aws, run_playbook, local_vars):
    """Two trn1.32xlarge of someone else's (256 vCPUs) leave 256 of the rehearsal's 512: 3 more are refused, 2 pass."""
    ec2 = aws.client("ec2")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    others = [i["InstanceId"] for i in ec2.run_instances(ImageId=image, InstanceType="trn1.32xlarge", MinCount=2, MaxCount=2)["Instances"]]
    try:
        variables = copy.deepcopy(local_vars)
        _set_pool(variables, count=3)
        refused = run_playbook(PREFLIGHT, extra_vars={"trainium_node_pools": variables["trainium_node_pools"], **NO_PLACEMENT_GROUPS})
        assert refused.rc != 0, refused
        assert "got 3 x trn1.32xlarge ON_DEMAND = 384 vCPUs; allowed: at most 256 vCPUs" in refused.text
        assert "minus 256 used by other Trainium instances" in refused.text
        assert "--desired-value 640" in refused.text
        fits = run_playbook(PREFLIGHT, extra_vars=NO_PLACEMENT_GROUPS)
        assert fits.rc == 0, fits
    finally:
        ec2.terminate_instances(InstanceIds=others)
