# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The AWS half of a deployment's status (playbooks/status.yml): the EKS
cluster, its node groups and the FSx for Lustre file system, with a handful
of describe calls, and the figures of a training script's ``LOG`` line."""

from __future__ import annotations

import datetime
import re

from ansible_collections.trainium.eks.plugins.module_utils.trainium_common import AWSCallHandler
from ansible_collections.trainium.eks.plugins.module_utils.trainium_fsx import describe_file_systems, find_by_name
from ansible_collections.trainium.eks.plugins.module_utils.trainium_nodegroup import describe_cluster, describe_nodegroup

GIB = 1024**3
# LOG <asctime> - (<epoch>, <step>) step_loss : <loss> learning_rate : <lr> throughput : <seq/s>
LOG_RE = re.compile(
    r"\(\s*(?P<epoch>\d+)\s*,\s*(?P<step>\d+)\s*\)\s*step_loss\s*:\s*(?P<loss>[-+0-9.eE]+|nan|inf)"
    r"(?:\s+learning_rate\s*:\s*(?P<lr>[-+0-9.eE]+))?(?:\s+throughput\s*:\s*(?P<throughput>[-+0-9.eE]+))?"
)


def log_figures(line):
    """step, loss, learning rate and throughput of a ``LOG`` line; {} when it has none."""
    found = LOG_RE.search(line or "")
    if not found:
        return {}
    figures = {"epoch": int(found["epoch"]), "step": int(found["step"]), "loss": float(found["loss"])}
    for key in ("lr", "throughput"):
        if found[key] is not None:
            figures[key] = float(found[key])
    return figures


@AWSCallHandler.common_error_handler("read the file system's free capacity")
def _free_bytes(cloudwatch, file_system_id, now):
    answer = cloudwatch.get_metric_statistics(
        Namespace="AWS/FSx", MetricName="FreeDataStorageCapacity",
        Dimensions=[{"Name": "FileSystemId", "Value": file_system_id}],
        StartTime=now - datetime.timedelta(minutes=30), EndTime=now, Period=300, Statistics=["Minimum"],
    )
    points = sorted(answer.get("Datapoints", []), key=lambda p: p["Timestamp"])
    return points[-1]["Minimum"] if points else None


def read_aws(eks, fsx, cloudwatch, cluster, nodegroups, file_system_name, now=None):
    """What exists of a deployment on AWS; a part that does not exist is ``{"exists": False}``."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    found = describe_cluster(eks, cluster)
    status = {"cluster": {"name": cluster, "exists": False}, "nodegroups": [], "file_system": {"name": file_system_name, "exists": False}}
    if found:
        status["cluster"].update(exists=True, status=found.get("status"), version=found.get("version"), endpoint=found.get("endpoint"),
                                 arn=found.get("arn"), certificate_authority=(found.get("certificateAuthority") or {}).get("data"),
                                 created=str(found.get("createdAt") or "") or None)
    for name in nodegroups:
        group = describe_nodegroup(eks, cluster, name) if found else None
        entry = {"name": name, "exists": bool(group)}
        if group:
            scaling = group.get("scalingConfig") or {}
            entry.update(status=group.get("status"), desired=scaling.get("desiredSize"), min=scaling.get("minSize"), max=scaling.get("maxSize"),
                         instance_types=group.get("instanceTypes") or [], capacity_type=group.get("capacityType"),
                         issues=[f"{i.get('code')} - {i.get('message')}" for i in (group.get("health") or {}).get("issues", [])])
        status["nodegroups"].append(entry)
    live = find_by_name(describe_file_systems(fsx), file_system_name)[0] if file_system_name else None
    file_system = live[0] if live else None
    if file_system:
        capacity = file_system.get("StorageCapacity")
        free = _free_bytes(cloudwatch, file_system["FileSystemId"], now)
        lustre = file_system.get("LustreConfiguration") or {}
        status["file_system"].update(
            exists=True, id=file_system["FileSystemId"], status=file_system.get("Lifecycle"), capacity_gib=capacity,
            deployment_type=lustre.get("DeploymentType"), dns_name=file_system.get("DNSName"),
            free_gib=None if free is None else round(free / GIB, 1),
            used_percent=None if free is None or not capacity else round(100 * (1 - free / (capacity * GIB)), 1),
        )
    return status
