#!/usr/bin/env bash
# ansible-test sanity needs the collection at .../ansible_collections/trainium/eks.
# Copy the files git knows (tracked and new, not ignored) there, put the
# collections we import from next to it (from the pinned `ansible` bundle, no
# download), and run every sanity test for the controller's Python.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${VENV:-$ROOT/.venv}/bin"
DEST="$ROOT/.build/sanity/ansible_collections"
rm -rf "$DEST"
mkdir -p "$DEST/trainium/eks"
cd "$ROOT"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [[ -e "$f" ]] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$DEST/trainium/eks"
SITE="$("$BIN/python" -c 'import ansible_collections.amazon.aws as m, os; print(os.path.dirname(os.path.dirname(os.path.dirname(m.__file__))))')"
mkdir -p "$DEST/amazon"
cp -r "$SITE/ansible_collections/amazon/aws" "$DEST/amazon/aws"
cd "$DEST/trainium/eks"
# A git repository makes ansible-test list exactly these files.
git init -q . && git add -A >/dev/null
PY="$("$BIN/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
"$BIN/ansible-test" sanity --color no --venv --python "$PY" "$@"
