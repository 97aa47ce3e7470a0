#!/usr/bin/env bash
# Every suite, in the order a failure is cheapest to find. `make test` runs it.
# The rehearsal services are started once for the suites that need them and
# stopped at the end, whatever happens.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
BIN="${VENV:-$ROOT/.venv}/bin"
export PATH="$BIN:$PATH" ANSIBLE_CONFIG="$ROOT/ansible.cfg"

passed=0
failed=0
failures=()
run() {
  local name="$1"
  shift
  local started
  started=$(date +%s)
  printf '\n===== %s =====\n' "$name"
  if "$@"; then
    passed=$((passed + 1))
    printf '===== %s: passed in %ss =====\n' "$name" "$(( $(date +%s) - started ))"
  else
    failed=$((failed + 1))
    failures+=("$name")
    printf '===== %s: FAILED after %ss =====\n' "$name" "$(( $(date +%s) - started ))"
  fi
}

run lint bash -c 'yamllint --strict . && ansible-lint'
run changelog antsibull-changelog lint
run sanity tools/sanity.sh

tools/rehearsal/rehearsal.sh up || { echo "the rehearsal services did not start"; exit 1; }
trap 'tools/rehearsal/rehearsal.sh down' EXIT
# shellcheck disable=SC1091
source .rehearsal/env.sh

run "unit and integration tests" pytest tests/unit tests/integration
run molecule molecule test --all
run build tools/build-check.sh

trap - EXIT
tools/rehearsal/rehearsal.sh down || { failed=$((failed + 1)); failures+=("rehearsal-down"); }

printf '\n'
if (( failed )); then printf 'failed suites: %s\n' "${failures[*]}"; fi
printf 'suites: %d passed, %d failed\n' "$passed" "$failed"
exit $(( failed > 0 ))
