# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The training_image role against the rehearsal: moto's ECR (token and repositoryUri of the local registry),
the registry, buildah, and the base image the rehearsal builds from Debian packages.

The ecr role makes the repository, training_image builds FROM the rehearsal base with a RUN step and pushes;
the registry's catalog and the image's history show it. A rerun builds nothing; a content change gives a
new tag; check mode builds nothing. The workload files are a test directory of their own
(training_image_workload_dir), so this tests the mechanism, not the example workload.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import pathlib
import shlex
import ssl
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# The helpers have no Ansible imports: loaded from the checkout, the tag is computed the module's way.
_SPEC = importlib.util.spec_from_file_location("trainium_image", ROOT / "plugins" / "module_utils" / "trainium_image.py")
ti = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ti)

# The registry's storage and buildah's: one test after another, on one worker.
pytestmark = pytest.mark.xdist_group("registry")

PLAYBOOK = """
- name: Training image
  hosts: trainium
  gather_facts: false
  roles:
    - role: trainium.eks.ecr
      when: with_ecr | default(true) | bool
    - role: trainium.eks.training_image
  post_tasks:
    - name: Keep the facts for the test
      ansible.builtin.copy:
        content: "{{ training_image_facts | to_json }}"
        dest: "{{ facts_file }}"
        mode: "0600"
      check_mode: false
      changed_when: false
"""


class Registry:
    """Reads of the rehearsal registry as user trainium (not the ECR token: the test checks, it does not use, it)."""

    def __init__(self, env):
        self.url = env["TRAINIUM_REGISTRY_URL"]
        self.auth = base64.b64encode(f"{env['TRAINIUM_REGISTRY_USERNAME']}:{env['TRAINIUM_REGISTRY_PASSWORD']}".encode()).decode()
        self.context = ssl.create_default_context(cafile=env["TRAINIUM_REGISTRY_CA_FILE"])

    def get(self, path, accept=ti.MANIFEST_ACCEPT):
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"Basic {self.auth}", "Accept": accept})
        try:
            with urllib.request.urlopen(request, timeout=10, context=self.context) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, None

    def tags(self, repository):
        status, body = self.get(f"/v2/{repository}/tags/list")
        return sorted((body or {}).get("tags") or []) if status == 200 else []


@pytest.fixture()
def image_run(aws, run_playbook, rehearsal, tmp_path, local_vars):
    """run(extra vars, check=False) -> (result, facts, seconds) of the playbook with the rehearsal's builder settings."""
    playbook = tmp_path / "image.yml"
    playbook.write_text(PLAYBOOK)
    workload = tmp_path / "workload"
    (workload / "lib").mkdir(parents=True)
    (workload / "train_bert.py").write_text("print('train')\n")
    (workload / "lib" / "helper.py").write_text("X = 1\n")
    (workload / "requirements.txt").write_text("h5py==3.12.1 --hash=sha256:" + "0" * 64 + "\n")
    facts_file = tmp_path / "facts.json"
    base = {
        "trainium_aws_endpoint_url": rehearsal["AWS_ENDPOINT_URL"],
        "trainium_image": dict(local_vars["trainium_image"], repository=f"img-{os.getpid()}-{time.time_ns() % 10**6}",
                               base_image=rehearsal["TRAINIUM_REHEARSAL_BASE_IMAGE"]),
        "training_image_builder": "buildah",
        "training_image_builder_options": shlex.split(rehearsal["TRAINIUM_BUILDAH_OPTS"]),
        "training_image_isolation": rehearsal.get("TRAINIUM_BUILDAH_ISOLATION", "chroot"),
        "training_image_registry_ca_dir": rehearsal["TRAINIUM_REGISTRY_CERT_DIR"],
        "training_image_workload_dir": str(workload),
        "training_image_context_dir": str(tmp_path / "context"),
        "facts_file": str(facts_file),
    }

    def run(extra=None, check=False):
        if facts_file.exists():
            facts_file.unlink()
        started = time.monotonic()
        result = run_playbook(str(playbook), extra_vars=dict(base, **(extra or {})), args=["--check"] if check else [])
        seconds = time.monotonic() - started
        facts = json.loads(facts_file.read_text()) if facts_file.exists() else None
        return result, facts, seconds

    run.base = base
    run.workload = workload
    run.context = tmp_path / "context"
    return run


def test_build_push_rerun_change_and_check_mode(image_run, rehearsal):
    registry = Registry(rehearsal)
    repository = image_run.base["trainium_image"]["repository"]
    prefix = image_run.base["trainium_image"]["tag"]

    first, facts, first_seconds = image_run()
    assert first.rc == 0 and first.recap["changed"] > 0, first
    assert facts["built"] is True, facts
    tag = facts["tag"]
    # Content-addressed: the prefix and 12 hex of the rendered context's hash.
    assert tag == ti.content_tag(prefix, str(image_run.context)), tag
    assert facts["image"] == f"{rehearsal['TRAINIUM_REGISTRY']}/{repository}:{tag}"
    # The pods' reference: the same image pinned by the digest the push returned.
    assert facts["reference"] == f"{facts['image']}@{facts['digest']}" and facts["digest"].startswith("sha256:")
    status, catalog = registry.get("/v2/_catalog")
    assert status == 200 and repository in catalog["repositories"], catalog
    assert registry.tags(repository) == [tag]
    status, manifest = registry.get(f"/v2/{repository}/manifests/{tag}")
    assert status == 200
    # The RUN step ran in the build: the image's history has it, after the COPY steps, on the rehearsal base.
    status, config = registry.get(f"/v2/{repository}/blobs/{manifest['config']['digest']}", accept="*/*")
    assert status == 200
    history = [step.get("created_by", "") for step in config["history"]]
    assert any("sha256sum -c SHA256SUMS" in step for step in history), history
    assert config["config"]["WorkingDir"] == "/opt/trainium-eks"
    assert config["config"]["Labels"]["org.opencontainers.image.base.name"] == rehearsal["TRAINIUM_REHEARSAL_BASE_IMAGE"]
    sums = (image_run.context / "SHA256SUMS").read_text().splitlines()
    assert [line.split("  ", 1)[1] for line in sums] == ["lib/helper.py", "requirements.txt", "train_bert.py"]

    again, facts_again, rerun_seconds = image_run()
    assert again.rc == 0 and again.recap["changed"] == 0, again.changed_tasks
    assert facts_again == dict(facts, built=False), facts_again
    assert registry.tags(repository) == [tag]
    print(f"\ntraining_image: first build and push {first_seconds:.1f} s, no-op rerun {rerun_seconds:.1f} s (whole playbook)")

    # A content change: check mode says it would build a new tag and builds nothing ...
    (image_run.workload / "train_bert.py").write_text("print('train harder')\n")
    checked, checked_facts, _seconds = image_run(check=True)
    assert checked.rc == 0 and checked.recap["changed"] > 0, checked
    assert "would build and push" in checked.text
    assert checked_facts["built"] is False and checked_facts["digest"] is None
    assert checked_facts["tag"] != tag and checked_facts["tag"].startswith(prefix + "-")
    assert registry.tags(repository) == [tag]

    # ... and the real run pushes that tag; a file that left the workload leaves the context.
    (image_run.workload / "lib" / "helper.py").unlink()
    changed, changed_facts, _seconds = image_run()
    assert changed.rc == 0 and changed_facts["built"] is True, changed
    assert changed_facts["tag"] not in (tag, checked_facts["tag"])
    assert registry.tags(repository) == sorted([tag, changed_facts["tag"]])
    assert not (image_run.context / "workload" / "lib" / "helper.py").exists()

    gone, gone_facts, _seconds = image_run({"training_image_state": "absent", "with_ecr": False})
    assert gone.rc == 0 and not image_run.context.exists() and gone_facts["image"] is None, gone


def test_a_base_image_that_cannot_be_pulled_fails_with_the_builders_lines(image_run, rehearsal):
    missing = f"{rehearsal['TRAINIUM_REGISTRY']}/rehearsal/no-such-base:1"
    failed, _facts, _seconds = image_run({"trainium_image": dict(image_run.base["trainium_image"], base_image=missing)})
    assert failed.rc != 0
    assert f"buildah could not pull the base image {missing}" in failed.text, failed
    assert "last lines of its output" in failed.text


def test_no_repository_stops_the_run(image_run, aws):
    failed, _facts, _seconds = image_run({"with_ecr": False})
    assert failed.rc != 0
    assert f"The ECR repository {image_run.base['trainium_image']['repository']} does not exist" in failed.text, failed
    assert aws.client("ecr").describe_repositories()["repositories"] == []


def test_the_rehearsal_base_image_is_debian_busybox(rehearsal):
    """registry.sh's base image: in the registry under a tag from the package versions, with /bin/sh."""
    registry = Registry(rehearsal)
    base = rehearsal["TRAINIUM_REHEARSAL_BASE_IMAGE"]
    repository, tag = base.split("/", 1)[1].rsplit(":", 1)
    assert repository == "rehearsal/debian-base" and tag.startswith("bookworm-busybox-1."), base
    # It stands in for the Neuron DLC of SDK 2.29 (the xla track's) and says so, as a DLC's tag does (the validation reads it).
    assert tag.endswith("-standin-sdk2.29.1"), base
    status, manifest = registry.get(f"/v2/{repository}/manifests/{tag}")
    assert status == 200 and len(manifest["layers"]) == 1
    status, config = registry.get(f"/v2/{repository}/blobs/{manifest['config']['digest']}", accept="*/*")
    assert config["config"]["Cmd"] == ["/bin/sh"]
    assert any(item.startswith("PATH=") and "/bin" in item for item in config["config"]["Env"])


def test_check_mode_on_an_empty_account_says_what_it_would_build(image_run, aws, rehearsal):
    checked, facts, _seconds = image_run(check=True)
    assert checked.rc == 0, checked
    repository = image_run.base["trainium_image"]["repository"]
    assert f"Would build {repository} FROM {rehearsal['TRAINIUM_REHEARSAL_BASE_IMAGE']}" in checked.text, checked
    assert facts == {"image": None, "tag": None, "digest": None, "reference": None, "built": False}
    assert aws.client("ecr").describe_repositories()["repositories"] == []
    assert Registry(rehearsal).tags(repository) == []
