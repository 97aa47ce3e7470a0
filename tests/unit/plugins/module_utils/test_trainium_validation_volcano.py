# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The volcano role's rules: a manifest checksum is never trusted on first use; queues Volcano accepts."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.trainium.eks.plugins.module_utils import trainium_validation as tv

ROOT = pathlib.Path(__file__).resolve().parents[4]
ROLE = ROOT / "roles" / "volcano"
SPEC = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
URL = "https://raw.githubusercontent.com/volcano-sh/volcano/v1.15.1/installer/volcano-development.yaml"
GOOD = {
    "volcano_state": "present",
    "volcano_install_mode": "install",
    "volcano_version": "v1.10.0",
    "volcano_manifest_url": URL.replace("v1.15.1", "v1.10.0"),
    "volcano_manifest_sha256": "",
    "volcano_queues": [{"name": "test"}],
    "volcano_wait_timeout": 300,
    "volcano_queue_wait_timeout": 60,
}


def problems(**changes):
    return tv.role_problems("volcano", SPEC, dict(GOOD, **changes))


def test_the_rehearsal_release_and_a_full_queue_are_fine():
    queue = {"name": "trn-jobs", "weight": 4, "reclaimable": False, "capability": {"cpu": 256, "memory": "2Ti", "aws.amazon.com/neuron": "32"}}
    assert problems() == []
    assert problems(volcano_queues=[queue], volcano_install_mode="adopt") == []
    assert problems(volcano_manifest_url="file:///root/go/pkg/mod/volcano.sh/volcano@v1.10.0/installer/volcano-development.yaml") == []


UNSHIPPED = URL.replace("v1.15.1", "v1.14.0")


def test_the_default_release_needs_no_checksum_of_the_users():
    """v1.15.1, the default (the AWS inventory's), runs with the shipped checksum: nothing to pin by hand."""
    assert tv.volcano_release_sha256("v1.15.1") == "b5fb45a57bcd1132be7055354999d244266873710609afd1f162005772d15c41"
    assert problems(volcano_version="v1.15.1", volcano_manifest_url=URL) == []


def test_a_release_without_a_shipped_checksum_is_refused_in_one_line_that_says_how_to_get_it():
    found = problems(volcano_version="v1.14.0", volcano_manifest_url=UNSHIPPED)
    assert len(found) == 1, found
    line = found[0]
    assert "\n" not in line
    assert line.startswith("volcano_manifest_sha256: got '' (str); allowed: the sha256 of the Volcano v1.14.0 manifest " + UNSHIPPED)
    assert "ships no checksum for v1.14.0 (only for v1.10.0, v1.15.1)" in line
    assert "never trusts a download on first use" in line
    assert line.endswith(f"curl -fsSL {UNSHIPPED} | sha256sum")


def test_a_given_checksum_is_used_for_any_release_and_must_be_a_sha256():
    assert problems(volcano_version="v1.14.0", volcano_manifest_url=UNSHIPPED, volcano_manifest_sha256="ab" * 32) == []
    found = problems(volcano_version="v1.15.1", volcano_manifest_sha256="sha256:" + "ab" * 32)
    assert len(found) == 1 and found[0].startswith("volcano_manifest_sha256: got 'sha256:abab"), found
    assert "64 lowercase hex digits" in found[0]


def test_the_role_reads_the_one_table_through_the_filter():
    """One table (tv.VOLCANO_MANIFEST_SHA256): the role's checksum is the user's, else the filter's answer from it."""
    from ansible_collections.trainium.eks.plugins.filter.trainium import FilterModule

    shipped = FilterModule().filters()["volcano_release_sha256"]
    assert {version: shipped(version) for version in tv.VOLCANO_MANIFEST_SHA256} == tv.VOLCANO_MANIFEST_SHA256
    assert all(tv.SHA256_RE.match(value) for value in tv.VOLCANO_MANIFEST_SHA256.values())
    assert shipped("v1.14.0") == "" and shipped(None) == ""
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    assert role_vars["volcano_manifest_checksum"] == \
        "{{ volcano_manifest_sha256 or (volcano_version | trainium.eks.volcano_release_sha256) }}"
    assert not [name for name in role_vars if "checksums" in name]  # no second table


@pytest.mark.parametrize("change, line", [
    ({"volcano_version": "1.15.1"}, "volcano_version: got '1.15.1' (str); allowed: a Volcano release such as v1.15.1"),
    ({"volcano_manifest_url": "http://example.com/volcano.yaml"}, "volcano_manifest_url: got 'http://example.com/volcano.yaml' (str); allowed: an https://"),
    ({"volcano_install_mode": "helm"}, "volcano_install_mode: got 'helm' (str); allowed: one of install, adopt"),
    ({"volcano_queues": [{"name": "Test"}]}, "volcano_queues[0].name: got 'Test' (str); allowed: a queue name (DNS label"),
    ({"volcano_queues": [{"name": "default"}]}, "volcano_queues[0].name: got 'default' (str); allowed: a queue other than default and root"),
    ({"volcano_queues": [{"name": "root"}]}, "volcano_queues[0].name: got 'root' (str); allowed: a queue other than default and root"),
    ({"volcano_queues": [{"name": "a"}, {"name": "a"}]}, "volcano_queues[1].name: got 'a' (str); allowed: each queue name once"),
    ({"volcano_queues": [{"name": "a", "weight": 0}]}, "volcano_queues[0].weight: got 0 (int); allowed: an integer from 1 to 65535"),
    ({"volcano_queues": [{"name": "a", "weight": "heavy"}]}, "volcano_queues[0].weight: got 'heavy' (str); allowed: an integer"),
    ({"volcano_queues": [{"name": "a", "reclaimable": "perhaps"}]}, "volcano_queues[0].reclaimable: got 'perhaps' (str); allowed: a boolean"),
    ({"volcano_queues": [{"name": "a", "priority": 3}]}, "volcano_queues[0].priority: got 3 (int); allowed: no such key"),
    ({"volcano_queues": [{"weight": 3}]}, "volcano_queues[0].name: got None (null); allowed: a string (required)"),
    ({"volcano_queues": [{"name": "a", "capability": {"aws.amazon.com/neuron": "sixteen"}}]},
     "volcano_queues[0].capability.aws.amazon.com/neuron: got 'sixteen' (str); allowed: a Kubernetes quantity"),
    ({"volcano_queues": [{"name": "a", "capability": {"neuron cores": 2}}]},
     "volcano_queues[0].capability: got 'neuron cores' (str); allowed: resource names"),
    ({"volcano_queues": {"name": "a"}}, "volcano_queues: got {'name': 'a'} (dict); allowed: a list"),
    ({"volcano_wait_timeout": 0}, "volcano_wait_timeout: got 0 (int); allowed: an integer from 10 to 3600"),
    ({"volcano_queue_wait_timeout": "9999"}, "volcano_queue_wait_timeout: got 9999 (int); allowed: an integer from 5 to 3600"),
])
def test_one_bad_variable_gives_one_line(change, line):
    found = problems(**change)
    assert len(found) == 1, found
    assert found[0].startswith(line), found[0]
    assert "\n" not in found[0]


def test_defaults_read_nothing_that_the_first_task_sets():
    """Ansible templates the defaults of the argument spec's options before the role's first task sets trainium_deployment."""
    text = (ROLE / "defaults" / "main.yml").read_text()
    assert [line for line in text.splitlines() if "trainium_deployment" in line and not line.lstrip().startswith("#")] == []
    assert yaml.safe_load(text)["volcano_queues"] is None
    assert problems(volcano_queues=None) == []


@pytest.mark.parametrize("volcano, kubernetes, refused", [
    ("v1.15.1", "1.35", False), ("v1.15.1", "1.24", False), ("v1.15.1", "1.36", True), ("v1.13.0", "1.34", True), ("v1.15.1", "1.29", False),
    ("v1.14.0", "1.34", False), ("v1.14.0", "1.35", True), ("v1.10.0", "1.30", False), ("v1.10.0", "1.35", True),
    # A release whose range the collection does not know: nothing to say.
    ("v1.16.0", "1.36", False),
])
def test_the_kubernetes_version_must_be_one_the_volcano_release_supports(volcano, kubernetes, refused):
    found = problems(volcano_version=volcano, volcano_manifest_url=URL.replace("v1.15.1", volcano), volcano_manifest_sha256="a" * 64,
                     trainium_kubernetes_version=kubernetes)
    assert bool(found) is refused, found
    if refused:
        (line,) = found
        assert line.startswith(f"trainium_kubernetes_version: got '{kubernetes}' (str); allowed: a version that Volcano {volcano} "
                               "(volcano_version) supports, ")
        assert "(Volcano README, 'Kubernetes compatibility')" in line and line.endswith("(volcano_allow_unsupported_kubernetes: true runs it anyway)")


def test_kubernetes_1_36_names_volcano_and_a_known_good_pair_names_the_release_to_take():
    (line,) = problems(volcano_version="v1.15.1", volcano_manifest_url=URL, trainium_kubernetes_version="1.36")
    assert "supports, 1.24 to 1.35" in line and "no Volcano release this collection knows supports it yet" in line
    (line,) = problems(trainium_kubernetes_version="1.35")
    assert "Volcano v1.10.0 (volcano_version) supports, 1.21 to 1.30" in line and "or a Volcano release of v1.15" in line
    assert problems(trainium_kubernetes_version="1.35", volcano_allow_unsupported_kubernetes=True) == []
