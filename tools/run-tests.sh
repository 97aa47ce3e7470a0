#!/usr/bin/env bash
# Every suite, in the order a failure is cheapest to find. `make test` runs it.
# The rehearsal services are started once for the suites that need them and
# stopped at the end, whatever happens. At the end: a table of the suites
# (result, seconds, test counts where the runner gives them), the total, the
# pytest counts and, last, `suites: N passed, N failed`. Each suite's output
# is also kept in .build/test-logs/<suite>.log (the suite's name in lower case,
# each run of other characters one "-": unit-rehearsal-integration.log,
# molecule-shared-stack.log, ...); a run removes the logs of the one before.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
BIN="${VENV:-$ROOT/.venv}/bin"
export PATH="$BIN:$PATH" ANSIBLE_CONFIG="$ROOT/ansible.cfg"
LOGS="$ROOT/.build/test-logs"
mkdir -p "$LOGS" && rm -f "$LOGS"/*.log "$LOGS"/cpu-*.tsv
all_started=$(date +%s)

passed=0
failed=0
failures=()
rows=()
pytest_counts=""

# counts SUITE LOG: what the runner says it ran, on one line (empty if it says nothing).
counts() {
  local log="$1"
  case "$2" in
    pytest)
      # The final line: "==== 3 failed, 700 passed, 1 error in 512.30s ====".
      sed -n 's/^=* \(.*[0-9] \(passed\|failed\|error\|errors\|skipped\|no tests ran\).*\) in [0-9.]*s.*$/\1/p' "$log" | tail -n 1
      ;;
    molecule)
      # The scenario recap: "<scenario>: actions=N  successful=N ... failed=N", one line per scenario.
      # A failure in cleanup ends Molecule before its recap: such a scenario
      # shows only as "<scenario> ➜ <action>: Executed: Failed" and is counted
      # from that line when the recap does not name it.
      sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '
        /^[A-Za-z0-9_-]+ *: actions=[0-9]+/ { n++; recapped[$1] = 1; if ($0 ~ /failed=[1-9]/) bad++ }
        /^(ERROR|CRITICAL)? *[A-Za-z0-9_-]+ ➜ [a-z_]+: Executed: Failed/ {
          for (i = 1; i <= NF; i++) if ($(i + 1) == "➜") {
            action = $(i + 2); sub(/:$/, "", action)
            if (!($i in failing)) failing[$i] = action
            break
          }
        }
        END {
          for (s in failing) if (!(s in recapped)) { n++; bad++; late = late " " s " (" failing[s] ")" }
          if (n) printf "%d scenarios, %d failed%s", n, bad, (late ? ";" late : "")
        }'
      ;;
  esac
}

# logfile NAME: where a suite's output is kept.
logfile() {
  local name
  name="$(tr '[:upper:]' '[:lower:]' <<<"$1" | sed -E 's/[^a-z0-9_]+/-/g; s/^-+//; s/-+$//')"
  printf '%s/%s.log' "$LOGS" "$name"
}

# record NAME KIND RC STARTED [ENDED]: a suite's result, its row in the table
# (ENDED: when it ended, seconds since the epoch; now when not given).
record() {
  local name="$1" kind="$2" rc="$3" started="$4" ended="${5:-$(date +%s)}" seconds result log ran
  log="$(logfile "$name")"
  if (( rc == 0 )); then
    result=passed
    passed=$((passed + 1))
  else
    result=FAILED
    failed=$((failed + 1))
    failures+=("$name")
  fi
  seconds=$(( ended - started ))
  printf '===== %s: %s in %ss =====\n' "$name" "$result" "$seconds"
  ran="$(counts "$log" "$kind")"
  if [[ "$kind" == pytest ]]; then pytest_counts="$ran"; fi
  rows+=("$(printf '%-44s %-7s %6s  %s' "$name" "$result" "$seconds" "$ran")")
}

# run NAME KIND COMMAND...: one suite, its output shown and kept in $LOGS/NAME.log.
run() {
  local name="$1" kind="$2" started rc
  shift 2
  started=$(date +%s)
  printf '\n===== %s =====\n' "$name"
  "$@" 2>&1 | tee "$(logfile "$name")"
  rc=${PIPESTATUS[0]}
  record "$name" "$kind" "$rc" "$started"
}

# beside NAME KIND COMMAND...: one suite in the background, beside the next
# ones; its output goes to $LOGS/NAME.log and is shown by `joined NAME`. It
# runs in a process group of its own (setsid), so that an interrupted run
# stops all of it (ansible-playbook and its module processes too):
# stop_beside.
declare -A beside_pid beside_started beside_kind
beside() {
  local name="$1" kind="$2"
  shift 2
  printf '\n===== %s: started in the background (%s) =====\n' "$name" "$(logfile "$name")"
  beside_started[$name]=$(date +%s)
  beside_kind[$name]=$kind
  setsid "$@" > "$(logfile "$name")" 2>&1 < /dev/null &
  beside_pid[$name]=$!
}

# stop_beside: stop every background suite still running (its whole process group).
# shellcheck disable=SC2317  # called from the EXIT trap
stop_beside() {
  local name
  for name in "${!beside_pid[@]}"; do
    kill -TERM -- "-${beside_pid[$name]}" 2>/dev/null
    wait "${beside_pid[$name]}" 2>/dev/null
    unset "beside_pid[$name]"
  done
}

# joined NAME [RC]: wait for a background suite, show its output, record it
# (RC: its exit code, when the caller has waited for it already).
joined() {
  local name="$1" rc="${2:-0}"
  if (( $# < 2 )); then wait "${beside_pid[$name]}" || rc=$?; fi
  unset "beside_pid[$name]"
  printf '\n===== %s (ran in the background) =====\n' "$name"
  cat "$(logfile "$name")"
  # Its seconds end with its last output line (the log's time), not when it was joined.
  record "$name" "${beside_kind[$name]}" "$rc" "${beside_started[$name]}" "$(stat -c %Y "$(logfile "$name")")"
}

# Sanity (ansible-test on a copy of the tree) runs beside lint, the changelog
# check and the rehearsal's start: each of them uses about one core.
trap 'stop_beside' EXIT
beside sanity - tools/sanity.sh
run lint - bash -c 'yamllint --strict . && ansible-lint'
run changelog - antsibull-changelog lint

trap 'stop_beside; tools/rehearsal/rehearsal.sh down' EXIT
# A failed start still reports sanity's result before it stops the run.
tools/rehearsal/rehearsal.sh up || { echo "the rehearsal services did not start"; joined sanity; exit 1; }
joined sanity
# shellcheck disable=SC1091
source .rehearsal/env.sh

# Every Molecule scenario runs beside pytest on a rehearsal stack of its own
# (tools/molecule-lane.sh: its own moto, Kubernetes, Volcano, registry and
# rendezvous on other loopback ports), filling the core pytest leaves idle
# while its longest chain (the shared_stack group) runs. Should that stack not
# start (exit 3), the scenarios run after pytest on the shared stack.
LANE="molecule (own rehearsal stack)"
beside "$LANE" molecule tools/molecule-lane.sh

# tests/unit, tests/rehearsal and tests/integration (pytest.ini), in parallel
# workers (pytest-xdist); exit 5 (no tests collected) counts as a failure.
# Each test's CPU (its worker's and its child processes') goes to
# $LOGS/cpu-<worker>.tsv; tools/test-cpu.py prints it per file at the end,
# beside the machine's busy core-seconds during pytest (from /proc/stat).
busy_seconds() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / { print ($2 + $3 + $4 + $7 + $8) / hz }' /proc/stat; }
pytest_busy_started="$(busy_seconds)"
TRAINIUM_TEST_CPU_LOG="$LOGS/cpu" run "unit, rehearsal, integration" pytest pytest
pytest_busy="$(awk -v a="$pytest_busy_started" -v b="$(busy_seconds)" 'BEGIN { printf "%.0f", b - a }')"

lane_rc=0
wait "${beside_pid[$LANE]}" || lane_rc=$?
if (( lane_rc == 3 )); then
  unset "beside_pid[$LANE]"
  printf '\n===== %s: its stack did not start =====\n' "$LANE"
  cat "$(logfile "$LANE")"
  # Molecule starts from an empty shared account, whatever a test left there,
  # and from no scenario state.
  curl -fsS -o /dev/null -X POST "$AWS_ENDPOINT_URL/moto-api/reset" || echo "could not reset the shared moto before Molecule"
  molecule reset --all >/dev/null 2>&1 || echo "could not reset Molecule's scenario state"
  run "molecule (shared stack)" molecule molecule test --all
else
  joined "$LANE" "$lane_rc"
fi
run build - tools/build-check.sh

trap - EXIT
tools/rehearsal/rehearsal.sh down || { failed=$((failed + 1)); failures+=("rehearsal-down"); }

printf '\n'
"$BIN/python" tools/test-cpu.py "$LOGS/cpu" --machine "$pytest_busy" || true
printf '\n%-44s %-7s %6s  %s\n' suite result seconds tests
for row in "${rows[@]}"; do printf '%s\n' "$row"; done
printf '%-44s %-7s %6s\n' "total, wall (with rehearsal up/down)" "" "$(( $(date +%s) - all_started ))"
printf '\n'
if (( failed )); then
  printf 'failed suites: %s\n' "${failures[*]}"
  # What failed, by name, at the very end (a CI report may keep only the last
  # lines): pytest's short summary lines, then Molecule's failed actions.
  for name in "${failures[@]}"; do
    log="$(logfile "$name")"
    [[ -f "$log" ]] || continue
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^(FAILED|ERROR) |➜ [a-z_]+: Executed: Failed' | cut -c1-300 | head -n 20 |
      sed "s|^|  $name: |"
  done
fi
# The whole pytest run as "N passed, N failed" (errors count as failed).
if [[ -n "$pytest_counts" ]]; then
  tests_passed="$(grep -o '[0-9]* passed' <<<"$pytest_counts" | grep -o '[0-9]*' || echo 0)"
  tests_failed=$(( $(grep -o '[0-9]* failed' <<<"$pytest_counts" | grep -o '[0-9]*' || echo 0) \
    + $(grep -o '[0-9]* errors\?' <<<"$pytest_counts" | grep -o '[0-9]*' || echo 0) ))
  printf 'tests: %d passed, %d failed\n' "${tests_passed:-0}" "$tests_failed"
fi
printf 'suites: %d passed, %d failed\n' "$passed" "$failed"
exit $(( failed > 0 ))
