# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service Quotas additions to moto server for the trainium.eks rehearsal (see moto_ext.py).

moto 5.2.5 knows the default quotas of the VPC service only and has no
ListServiceQuotas. Preflight reads the two EC2 vCPU quotas of Trainium
instances, so this adds, for service code ``ec2`` in every region:

- ``Running On-Demand Trn instances`` (L-2C3B7624, the code AWS documents),
  TRAINIUM_REHEARSAL_TRN_ON_DEMAND_VCPUS vCPUs, default 512 (room for four
  trn1.32xlarge);
- ``All Trn Spot Instance Requests``, TRAINIUM_REHEARSAL_TRN_SPOT_VCPUS vCPUs,
  default 0 as on a new AWS account. The rehearsal gives it the code
  ``L-REHEARSAL-TRN-SPOT``; the collection finds it by name, never by code.

GetServiceQuota answers them, and ListServiceQuotas lists them (one page).
"""

from __future__ import annotations

import json
import os

ON_DEMAND_CODE = "L-2C3B7624"
SPOT_CODE = "L-REHEARSAL-TRN-SPOT"


def ec2_quotas(region, account_id):
    """The rehearsal's EC2 quotas of Trainium instances, in the GetServiceQuota shape."""
    values = (
        (ON_DEMAND_CODE, "Running On-Demand Trn instances", "TRAINIUM_REHEARSAL_TRN_ON_DEMAND_VCPUS", 512),
        (SPOT_CODE, "All Trn Spot Instance Requests", "TRAINIUM_REHEARSAL_TRN_SPOT_VCPUS", 0),
    )
    return [
        {
            "ServiceCode": "ec2", "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "QuotaArn": f"arn:aws:servicequotas:{region}:{account_id}:ec2/{code}",
            "QuotaCode": code, "QuotaName": name, "Value": float(os.environ.get(variable, default)),
            "Unit": "None", "Adjustable": True, "GlobalQuota": False,
        }
        for code, name, variable, default in values
    ]


def install():
    from moto.servicequotas.exceptions import NoSuchResource  # pylint: disable=import-outside-toplevel
    from moto.servicequotas.models import ServiceQuotasBackend  # pylint: disable=import-outside-toplevel
    from moto.servicequotas.responses import ServiceQuotasResponse  # pylint: disable=import-outside-toplevel

    original_get = ServiceQuotasBackend.get_service_quota

    def get_service_quota(self, service_code, quota_code):
        if service_code == "ec2":
            for quota in ec2_quotas(self.region_name, self.account_id):
                if quota["QuotaCode"] == quota_code:
                    return quota
            raise NoSuchResource
        return original_get(self, service_code, quota_code)

    def list_service_quotas(self, service_code):
        if service_code == "ec2":
            return ec2_quotas(self.region_name, self.account_id)
        return self.list_aws_default_service_quotas(service_code)

    def list_service_quotas_response(self):
        params = json.loads(self.body)
        return json.dumps({"Quotas": self.backend.list_service_quotas(str(params.get("ServiceCode")))})

    ServiceQuotasBackend.get_service_quota = get_service_quota
    ServiceQuotasBackend.list_service_quotas = list_service_quotas
    ServiceQuotasResponse.list_service_quotas = list_service_quotas_response
