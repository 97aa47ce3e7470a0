#!/usr/bin/env bash
# The rehearsal's training virtualenv: PyPI's torch (CPU is enough), h5py and
# python-etcd, pinned with hashes in tools/rehearsal/train-requirements.txt.
# It is kept apart from the collection's .venv (torch is ~3 GB).
#
#   tools/rehearsal/train-venv.sh      -> prints the venv path as its last stdout line
#
# The venv lives at ~/.cache/trainium-eks/train-venv/<first 12 hex of the
# sha256 of the requirements file>/, so a changed requirements file gets a new
# venv and an unchanged one is reused: a second run only checks a marker file.
# Everything but the path goes to stderr. Concurrent runs wait for each other
# (flock) instead of installing twice.
#
# Environment:
#   TRAINIUM_TRAIN_PYTHON      interpreter for the venv (default python3.11)
#   TRAINIUM_TRAIN_VENV_CACHE  parent directory (default ~/.cache/trainium-eks/train-venv)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
REQ="$ROOT/tools/rehearsal/train-requirements.txt"
PYTHON="${TRAINIUM_TRAIN_PYTHON:-python3.11}"
CACHE="${TRAINIUM_TRAIN_VENV_CACHE:-$HOME/.cache/trainium-eks/train-venv}"

say() { printf '[train-venv] %s\n' "$*" >&2; }

[[ -f "$REQ" ]] || { say "missing $REQ"; exit 1; }
digest="$(sha256sum "$REQ" | cut -c1-12)"
VENV="$CACHE/$digest"
MARKER="$VENV/.trainium-eks-complete"

if [[ -f "$MARKER" ]]; then
  say "reusing $VENV (requirements sha256 $digest)"
  echo "$VENV"
  exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.$digest.lock"
if ! flock -n 9; then
  say "another run is building $VENV; waiting for it"
  flock 9
fi
if [[ -f "$MARKER" ]]; then
  say "reusing $VENV (built meanwhile by another run)"
  echo "$VENV"
  exit 0
fi

command -v "$PYTHON" >/dev/null || { say "no $PYTHON on PATH (set TRAINIUM_TRAIN_PYTHON)"; exit 1; }
start=$(date +%s)
say "building $VENV with $("$PYTHON" --version 2>&1) from $REQ"
say "torch is PyPI's CUDA build: about 3 GB to download, it runs on CPU"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
# python-etcd is an sdist. It is built without isolation, with the setuptools
# pinned (hashed) in the requirements file, installed first: setuptools >= 70.1
# builds wheels by itself, and nothing unpinned is fetched for the build.
awk '/^setuptools==/{p=1} p&&!/^ *(#|$)/{print} p&&!/\\$/{if(p)exit}' "$REQ" > "$VENV/setuptools-requirement.txt"
pip_install() {
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input \
    --require-hashes --no-build-isolation "$@" >&2
}
if ! grep -q '^setuptools==' "$VENV/setuptools-requirement.txt" ||
   ! pip_install -r "$VENV/setuptools-requirement.txt" || ! pip_install -r "$REQ"; then
  say "pip install failed; removing the half-built $VENV"
  rm -rf "$VENV"
  exit 1
fi
installed=$(date +%s)
say "pip install took $((installed - start)) s"
if ! "$VENV/bin/python" -c 'import torch, h5py, etcd; print("torch", torch.__version__, "h5py", h5py.__version__)' >&2; then
  say "import torch, h5py, etcd failed in $VENV"
  exit 1
fi
[[ -x "$VENV/bin/torchrun" ]] || { say "no torchrun in $VENV/bin"; exit 1; }
printf '%s\n' "$(date -u +%FT%TZ) $digest" > "$MARKER"
say "ready in $(( $(date +%s) - start )) s: $VENV"
echo "$VENV"
