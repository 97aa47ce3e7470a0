# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/templates/status.html.j2, the page of playbooks/status.yml, rendered by ansible-core's templar
with what status.yml gives it (the converged page is checked by the end-to-end test)."""

from __future__ import annotations

from pathlib import Path

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "playbooks" / "templates" / "status.html.j2"


def node(name, instance_type, figures, expected=None, problems=()):
    entry = {"name": name, "pool": "trn1", "instance_type": instance_type, "zone": "us-west-2b", "ready": True,
             "neuron": figures[0], "neuroncore": figures[1], "efa": figures[2], "problems": list(problems),
             "device_plugins": {"neuron-device-plugin": "Ready"}}
    if expected is not None:  # trainium_node_check leaves it out for a type it has no figures of
        entry["expected"] = dict(zip(("neuron", "neuroncore", "efa"), expected))
    return entry


def render(lines, nodes):
    variables = {"status_d": {"cluster_name": "trn-x"}, "status_lines": lines, "status_nodes": {"nodes": nodes}}
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(PAGE.read_text(encoding="utf-8")))


def test_a_node_of_a_type_without_figures_is_shown_not_a_failure():
    page = render(["trainium.eks status: trn-x", "- node pool trn1: 2 node(s)"], [
        node("ip-10-0-1-1", "trn1.32xlarge", (16, 32, 8), expected=(16, 32, 8)),
        node("ip-10-0-1-2", "trn9.huge", (0, 0, 0), problems=["instance type trn9.huge is not among the types checked"]),
    ])
    assert "<td>16 / 16</td><td>32 / 32</td><td>8 / 8</td>" in page
    assert "<td>0 / ?</td><td>0 / ?</td><td>0 / ?</td>" in page
    assert page.count('<tr class="good">') == 1 and page.count('<tr class="bad">') == 1
    assert "instance type trn9.huge is not among the types checked" in page


def test_text_from_the_cluster_is_escaped():
    page = render(["trainium.eks status: trn-x", "- job <script>alert(1)</script> (training): Running"],
                  [node("<img src=x>", "trn1.32xlarge", (16, 32, 8), expected=(16, 32, 8), problems=["a & b"])])
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img" not in page and "a &amp; b" in page
