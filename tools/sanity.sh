#!/usr/bin/env bash
# ansible-test sanity needs the collection at .../ansible_collections/trainium/eks.
# Copy the files git knows (tracked and new, not ignored) there, put the
# collections we import from next to it (from the pinned `ansible` bundle, no
# download), and run every sanity test for the controller's Python.
#
# ansible-test's --venv mode downloads a pip bootstrap script from a host
# outside the package registries, so the tests run in local mode from a
# virtualenv of their own (.build/sanity-venv) holding the same ansible-core
# and the tool versions ansible-test pins in its requirement files.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MAIN_BIN="${VENV:-$ROOT/.venv}/bin"
SANITY_VENV="$ROOT/.build/sanity-venv"
BIN="$SANITY_VENV/bin"
CORE="$("$MAIN_BIN/python" -c 'import ansible.release as r; print(r.__version__)')"
REQS="$("$MAIN_BIN/python" -c 'import ansible_test, os; print(os.path.join(os.path.dirname(ansible_test.__file__), "_data", "requirements"))')"
STAMP="$SANITY_VENV/.stamp-$CORE"
if [[ ! -f "$STAMP" ]]; then
  echo "sanity: creating $SANITY_VENV for ansible-core $CORE (once)"
  rm -rf "$SANITY_VENV"
  "$MAIN_BIN/python" -m venv "$SANITY_VENV"
  args=()
  for f in "$REQS"/sanity.*.txt; do args+=(-r "$f"); done
  # Files that pin the same package twice agree; pip takes them together.
  "$BIN/python" -m pip install --quiet "ansible-core==$CORE" "${args[@]}"
  touch "$STAMP"
fi
DEST="$ROOT/.build/sanity/ansible_collections"
rm -rf "$DEST"
mkdir -p "$DEST/trainium/eks"
cd "$ROOT"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [[ -e "$f" ]] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$DEST/trainium/eks"
BUNDLE="$("$MAIN_BIN/python" -c 'import ansible, os; print(os.path.join(os.path.dirname(os.path.dirname(ansible.__file__)), "ansible_collections"))')"
mkdir -p "$DEST/amazon"
cp -r "$BUNDLE/amazon/aws" "$DEST/amazon/aws"
cd "$DEST/trainium/eks"
# A git repository makes ansible-test list exactly these files.
git init -q . && git add -A >/dev/null
# ansible-test bootstraps pip in its per-test virtualenvs with a script it
# downloads from outside the registries; give it the stand-in instead.
PIP_VERSION="$(grep -oP "pip='\K[0-9.]+" "$("$BIN/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py")"
mkdir -p ~/.ansible/test/cache
cp "$ROOT/tools/sanity/get_pip_standin.py" ~/.ansible/test/cache/"get_pip_${PIP_VERSION//./_}.py"
PY="$("$BIN/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
PATH="$BIN:$PATH" "$BIN/ansible-test" sanity --color no --python "$PY" "$@"
