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
INSTALL="$(mktemp -d)"
trap 'rm -rf "$INSTALL"' EXIT
# --no-deps: amazon.aws and the other dependencies come from the pinned bundle.
"$BIN/ansible-galaxy" collection install --no-deps -p "$INSTALL" "$TARBALL"
echo "installed $(basename "$TARBALL") into $INSTALL"
# Run from a directory without ansible.cfg so nothing resolves to the checkout.
WORK="$(mktemp -d)"
trap 'rm -rf "$INSTALL" "$WORK"' EXIT
cp -r "$ROOT/inventories/local" "$WORK/inventory"
cd "$WORK"
ANSIBLE_CONFIG=/dev/null ANSIBLE_COLLECTIONS_PATH="$INSTALL" \
  "$BIN/ansible-doc" trainium.eks.trainium_capacity_info >/dev/null
ANSIBLE_CONFIG=/dev/null ANSIBLE_COLLECTIONS_PATH="$INSTALL" \
  "$BIN/ansible-playbook" -i inventory trainium.eks.preflight
