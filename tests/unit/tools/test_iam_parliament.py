# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parliament (duo-labs' IAM policy linter) on every policy of docs/iam, placeholders filled in.

Every finding must be listed with its reason in docs/iam-policy.md, section
"What parliament reports" (file, finding, the actions it names, reason), and
every listed one must still be reported: a new finding fails here until it is
fixed or listed, a fixed one until its row goes. Its community auditors are
left out (opinions, not IAM's rules).
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import warnings

import pytest

with warnings.catch_warnings():
    # parliament 1.6.4 imports pkg_resources, which warns that it is deprecated.
    warnings.simplefilter("ignore")
    import parliament

ROOT = pathlib.Path(__file__).resolve().parents[3]
_SPEC = importlib.util.spec_from_file_location("iam_policy", ROOT / "tests" / "iam" / "iam_policy.py")
iam_policy = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(iam_policy)

VALUES = {"ACCOUNT_ID": "111122223333", "REGION": "eu-north-1", "CLUSTER_NAME": "trn-prod", "REPOSITORY_NAME": "bert",
          "ADDON_REGISTRY_ACCOUNT": "602401143452"}
DOC = ROOT / "docs" / "iam-policy.md"
SECTION = "## What parliament reports"
ROW_RE = re.compile(r"^\| `(?P<file>[^`]+)` \| `(?P<issue>[A-Z_]+)` \| (?P<actions>[^|]+) \| (?P<reason>[^|]+) \|$")
UNKNOWN_CONDITION_RE = re.compile(r"^Unknown condition (?P<key>\S+) for action (?P<action>\S+)$")


def findings_of(path):
    """{(file, issue, action)} parliament reports for one policy file."""
    policy = parliament.analyze_policy_string(iam_policy.render(path.read_text(encoding="utf-8"), VALUES), include_community_auditors=False)
    found = set()
    for finding in policy.findings:
        detail = finding.detail
        if isinstance(detail, str):
            match = UNKNOWN_CONDITION_RE.match(detail)
            actions = [f"{match['action']} ({match['key']})"] if match else [detail]
        else:
            actions = [item["action"] if isinstance(item, dict) else str(item) for item in detail or []]
        found |= {(path.name, finding.issue, action) for action in actions}
    return found


def listed():
    """{(file, issue, action): reason} of the doc's table."""
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC.name} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = ROW_RE.match(line.strip())
        if match:
            reason = match["reason"].strip()
            assert len(reason) > 20, f"{line}: say why"
            for action in re.findall(r"`([^`]+)`", match["actions"]):
                rows[(match["file"], match["issue"], action)] = reason
    return rows


FILES = sorted(path for stage in iam_policy.STAGES for path in iam_policy.policy_paths(stage))


def test_parliament_reads_every_policy_and_the_doc_lists_each_finding_with_its_reason():
    found = set().union(*(findings_of(path) for path in FILES))
    rows = listed()
    unlisted = sorted(found - set(rows))
    assert not unlisted, ("parliament reports findings that docs/iam-policy.md does not list; fix the policy, or add a row "
                          f"with the reason under {SECTION!r}: " + "; ".join(" ".join(f) for f in unlisted))
    stale = sorted(set(rows) - found)
    assert not stale, "rows of docs/iam-policy.md that parliament no longer reports (remove them): " + "; ".join(" ".join(f) for f in stale)


@pytest.mark.parametrize("statement,issue", [
    ({"Effect": "Allow", "Action": ["ec2:DeleteVpc"], "Resource": "*"}, "RESOURCE_STAR"),
    ({"Effect": "Allow", "Action": ["eks:DescribeClustr"], "Resource": "*"}, "UNKNOWN_ACTION"),
])
def test_parliament_is_not_silent_on_what_it_is_here_to_catch(tmp_path, statement, issue):
    """The check above can fail: parliament flags a write on every resource and an action that does not exist."""
    path = tmp_path / "trainium-eks-probe.json"
    path.write_text(json.dumps({"Version": "2012-10-17", "Statement": [statement]}), encoding="utf-8")
    assert issue in {found[1] for found in findings_of(path)}
