#!/usr/bin/env bash
# Run a command with the rehearsal services up and .rehearsal/env.sh sourced.
# Stops the services afterwards only when this script started them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REHEARSAL="$ROOT/tools/rehearsal/rehearsal.sh"
started_here=0
if ! "$REHEARSAL" status >/dev/null 2>&1; then
  "$REHEARSAL" up
  started_here=1
fi
cleanup() { if (( started_here )); then "$REHEARSAL" down || true; fi; }
trap cleanup EXIT
# shellcheck disable=SC1091
source "$ROOT/.rehearsal/env.sh"
"$@"
