# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documented additions to moto server for the trainium.eks rehearsal.

Each one closes a moto 5.2.5 gap that blocks a real code path of the
collection, keeping the response shapes of the AWS API reference (moto
serializes them from the botocore model like its own answers). Nothing in
the collection knows about these files. One file per AWS service, each with
an ``install()`` that patches moto and a docstring that lists its additions:

- moto_ext_ec2.py: capacity reservations, placement groups, the EKS-optimized
  AMIs, security group rule description updates answering ``Return``.
- moto_ext_eks.py: the cluster endpoint and CA of the rehearsal's
  kube-apiserver, the cluster security group, merging UpdateClusterConfig,
  AssociateEncryptionConfig and DescribeUpdate; KMS key ARNs where moto
  takes key IDs only (ScheduleKeyDeletion and co.).
- moto_ext_eks_rules.py: EKS's documented bounds on node group names, labels
  and taints (InvalidParameterException), which moto does not check.
- moto_ext_eks_versions.py: DescribeClusterVersions from EKS's release
  calendar; no upgrade policy STANDARD for a cluster in extended support.
- moto_ext_eks_addons.py: EKS managed add-ons (Create/Describe/List/Update/
  DeleteAddon, DescribeAddonVersions with a small version catalogue), their
  CREATING/UPDATING/DELETING lifecycle and tags.
- moto_ext_fsx.py: the file system lifecycle, UpdateFileSystem, AWS's
  DescribeFileSystems shape, network interfaces, automatic and final backups.
- moto_ext_ecr.py: GetAuthorizationToken and repositoryUri point at the
  rehearsal's registry (its password as the token of user AWS).
- moto_ext_ssm.py: the public SSM parameters of the EKS-optimized AMIs.
- moto_ext_servicequotas.py: the EC2 vCPU quotas of Trainium instances.
- moto_ext_faults.py: faults a test provokes through the API (a node group
  that ends CREATE_FAILED).
- moto_ext_timing.py: AWS's creation times at a scale factor (clusters, node
  groups and file systems stay CREATING), off unless a benchmark asks.

moto_server.py starts moto server after ``install()``.
"""

from __future__ import annotations

import moto_ext_ec2
import moto_ext_ecr
import moto_ext_eks
import moto_ext_eks_addons
import moto_ext_eks_rules
import moto_ext_eks_versions
import moto_ext_faults
import moto_ext_fsx
import moto_ext_servicequotas
import moto_ext_ssm
import moto_ext_timing

SERVICES = (moto_ext_ec2, moto_ext_ecr, moto_ext_eks, moto_ext_eks_addons, moto_ext_eks_rules, moto_ext_eks_versions, moto_ext_fsx,
            moto_ext_servicequotas, moto_ext_ssm, moto_ext_faults, moto_ext_timing)


def install():
    """Patch moto with every service's additions (once per process)."""
    for service in SERVICES:
        service.install()
