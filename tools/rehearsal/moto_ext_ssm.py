# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SSM additions to moto server for the trainium.eks rehearsal (see moto_ext.py).

EKS-optimized AMI public parameters. moto has no /aws/service/eks/... public
parameters. For Kubernetes 1.31 to 1.35 this publishes, in every region, the
Amazon Linux 2023 Neuron AMI
`/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/x86_64/neuron/`
`recommended/{image_id,image_name,release_version}` (the newest release,
v20260714) and each release
`.../neuron/amazon-eks-node-al2023-x86_64-neuron-<k8s>-v<date>/image_id`
(v20251120, v20260625, v20260714), plus the Amazon Linux 2 GPU AMI
`.../amazon-linux-2-gpu/recommended/...` and
`.../amazon-linux-2-gpu/amazon-eks-gpu-node-<k8s>-v<date>/image_id` for 1.31
and 1.32 only. Each parameter points at the AMI moto_ext_ec2.py registers in
the region's EC2 backend.
"""

from __future__ import annotations

from collections import defaultdict

from moto_ext_ec2 import eks_ami_id, eks_amis


def eks_ssm_parameters():
    """{name: value} of the EKS AMI public parameters the rehearsal publishes."""
    params = {}
    for path, image_name, release in eks_amis():  # oldest first: the newest of a path ends as its recommended one
        image_id = eks_ami_id(image_name)
        params[f"{path}/recommended/image_id"] = image_id
        params[f"{path}/recommended/image_name"] = image_name
        params[f"{path}/recommended/release_version"] = release
        params[f"{path}/{image_name}/image_id"] = image_id
    return params


def _check_loading_eks(original):
    def check(self, key):
        original(self, key)
        key = str(key or "")
        if key.startswith("/aws/service/eks") and not getattr(self, "_trainium_eks_loaded", False):
            self._trainium_eks_loaded = True
            from moto.core.utils import utcnow  # pylint: disable=import-outside-toplevel
            from moto.ssm.models import Parameter  # pylint: disable=import-outside-toplevel

            for name, value in eks_ssm_parameters().items():
                defaultdict.__getitem__(self, name).append(Parameter(
                    account_id=self.account_id, name=name, value=value, parameter_type="String",
                    description=None, allowed_pattern=None, keyid=None, last_modified_date=utcnow(),
                    version=1, data_type="text",
                ))

    return check


def install():
    from moto.ssm.models import ParameterDict  # pylint: disable=import-outside-toplevel

    ParameterDict._check_loading_status = _check_loading_eks(ParameterDict._check_loading_status)  # pylint: disable=protected-access
