#!/usr/bin/env bash
# Build the collection tarball, install it into an empty collections path and
# run a playbook from the installed copy (not from this checkout), so a file
# missing from the tarball fails here rather than on a user's machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${VENV:-$ROOT/.venv}/bin"
OUT="$ROOT/.build/dist"
rm -rf "$OUT"
mkdir -p "$OUT"
cd "$ROOT"
"$BIN/ansible-galaxy" collection build --force --output-path "$OUT" .
TARBALL="$(ls "$OUT"/trainium-eks-*.tar.gz)"

# A directory with its own ansible.cfg, so nothing resolves to the checkout.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
INSTALL="$WORK/collections"
printf '[defaults]\ncollections_path = %s\n' "$INSTALL" >"$WORK/ansible.cfg"
cp -r "$ROOT/inventories/local" "$WORK/inventory"
cd "$WORK"
export ANSIBLE_CONFIG="$WORK/ansible.cfg"
# --no-deps: amazon.aws and the other dependencies come from the pinned bundle.
"$BIN/ansible-galaxy" collection install --no-deps --force -p "$INSTALL" "$TARBALL"
test -f "$INSTALL/ansible_collections/trainium/eks/plugins/modules/trainium_capacity_info.py"
echo "installed $(basename "$TARBALL") into $INSTALL"
# Every module, lookup, filter and role documents itself from the installed copy.
for module in "$INSTALL"/ansible_collections/trainium/eks/plugins/modules/*.py; do
  "$BIN/ansible-doc" "trainium.eks.$(basename "$module" .py)" >/dev/null
done
for lookup in "$INSTALL"/ansible_collections/trainium/eks/plugins/lookup/*.py; do
  [[ -e "$lookup" ]] || continue
  "$BIN/ansible-doc" -t lookup "trainium.eks.$(basename "$lookup" .py)" >/dev/null
done
for role in "$INSTALL"/ansible_collections/trainium/eks/roles/*/; do
  "$BIN/ansible-doc" -t role "trainium.eks.$(basename "$role")" >/dev/null
done
echo "ansible-doc renders every module, lookup and role of the installed copy"
"$BIN/ansible-playbook" -i inventory trainium.eks.preflight
