# Writes docs/stages.md from the stage plan (meta/stages.yml) to stdout:
#   .venv/bin/python tools/stage-table.py > docs/stages.md
# The page's introduction is kept; the table after it is the plan's.
"""Print docs/stages.md with its table made from meta/stages.yml."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".collections"))
from ansible_collections.trainium.eks.plugins.plugin_utils import trainium_stages  # noqa: E402

MARK = "| stage | playbook | tag | role | what |"
page = (ROOT / "docs" / "stages.md").read_text(encoding="utf-8")
sys.stdout.write(page[:page.index(MARK)] + trainium_stages.markdown(trainium_stages.load()))
