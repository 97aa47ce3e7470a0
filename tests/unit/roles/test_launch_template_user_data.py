# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""roles/trn_launch_template/templates/nodeadm-user-data.j2: the MIME parts per pool.

Rendered with Jinja2 and Ansible's to_json alone (the template uses nothing else); the Molecule scenario checks the
NodeConfig part as EC2 stores it, this checks what differs per pool's Logical NeuronCore configuration, which the
scenario cannot place (the rehearsal's us-west-2 offers no trn2, as AWS's does not)."""

from __future__ import annotations

import email
import json
from pathlib import Path

import jinja2
import pytest

TEMPLATE = Path(__file__).resolve().parents[3] / "roles" / "trn_launch_template" / "templates" / "nodeadm-user-data.j2"


def render(lnc, lnc_default):
    # As Ansible's template lookup renders (trim_blocks on).
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    env.filters["to_json"] = json.dumps
    return env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
        trainium_deployment={"cluster_name": "trn-bert"},
        trn_launch_template_cluster_endpoint="https://example.eks.amazonaws.com",
        trn_launch_template_cluster_certificate_authority="Q0E=",
        trn_launch_template_service_ipv4_cidr="172.20.0.0/16",
        trn_launch_template_pool_labels={"trainium.eks/pool": "trn2"},
        trn_launch_template_pool_taints=[],
        trn_launch_template_taint_effects={},
        trn_launch_template_pool_lnc=lnc,
        trn_launch_template_pool_lnc_default=lnc_default,
    )


def parts(text):
    message = email.message_from_string(text)
    assert message.is_multipart(), text
    return {part.get_content_type(): part.get_payload() for part in message.get_payload()}


@pytest.mark.parametrize("lnc, lnc_default", [(2, 2), (1, 1), (None, None)])
def test_the_node_keeps_the_ami_lnc_when_the_pool_asks_for_it(lnc, lnc_default):
    assert list(parts(render(lnc, lnc_default))) == ["application/node.eks.aws"]


def test_a_trn2_pool_at_lnc_1_writes_the_node_config_file():
    found = parts(render(1, 2))
    assert list(found) == ["application/node.eks.aws", "text/x-shellscript"]
    script = found["text/x-shellscript"]
    assert script.startswith("#!/bin/bash\n")
    assert "printf 'NEURON_LOGICAL_NC_CONFIG=%s\\n' 1 > /opt/aws/neuron/logical_nc_config" in script
    assert "kind: NodeConfig" in found["application/node.eks.aws"]
