#!/usr/bin/env bash
# How long a no-op `site.yml` takes on a converged rehearsal.
#
#   tools/bench/noop-site.sh [--tree DIR] [--runs N] [--tags TAGS] [--teardown]
#
# Runs `ansible-playbook site.yml -i inventories/local` once to converge (a
# no-op itself when the rehearsal already holds the deployment), then times N
# more runs (default 1) and prints, for each, the wall seconds, the number of
# tasks executed (TASK headers in the output) and the PLAY RECAP counts of
# localhost. A timed run that changes anything is not a no-op: the script says
# so and exits 3 (someone reset the shared moto meanwhile, or the code is not
# idempotent). --teardown runs `site.yml --tags teardown` at the end, so the
# shared moto is left empty as other tests expect to find it.
#
# --tags TAGS (default: infrastructure, which is preflight + infrastructure,
# the scope of the 15 s target of issue 8; the platform and training stages
# came later) is passed to every run; --tags all times the whole site.yml.
#
# --tree DIR benchmarks another checkout of the collection (for example a
# `git worktree` of an older commit, with .collections linked as `make setup`
# does) with this checkout's virtualenv and rehearsal.
#
# Needs the shared rehearsal (`make rehearsal-up`): the EKS token
# authenticator and kube-apiserver only know the clusters of the shared moto,
# so a private moto would fail eks_cluster's access check. The shared moto is
# also what other tests reset; pick a quiet moment. Logs of every run are kept
# in .cache/bench/ of this checkout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TREE="$HERE"
RUNS=1
TAGS=infrastructure
TEARDOWN=0
while (( $# )); do
  case "$1" in
    --tree) TREE="$(cd "$2" && pwd)"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --tags) TAGS="$2"; shift 2 ;;
    --teardown) TEARDOWN=1; shift ;;
    -h|--help) sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

VENV="${VENV:-$HERE/.venv}"
ENV_FILE="${TRAINIUM_REHEARSAL_DIR:-$HERE/.rehearsal}/env.sh"
if [[ ! -f "$ENV_FILE" ]] || ! "$HERE/tools/rehearsal/rehearsal.sh" status >/dev/null; then
  echo "the rehearsal is not running (make rehearsal-up), or $ENV_FILE is missing" >&2
  exit 1
fi
if [[ ! -e "$TREE/.collections/ansible_collections/trainium/eks" ]]; then
  echo "$TREE has no .collections/ansible_collections/trainium/eks link (make setup creates it)" >&2
  exit 1
fi
# shellcheck disable=SC1090
source "$ENV_FILE"
# The default callback, which prints every task header, so that the task count compares across versions.
export PATH="$VENV/bin:$PATH" ANSIBLE_CONFIG="$TREE/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 \
  ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default ANSIBLE_DISPLAY_SKIPPED_HOSTS=true
LOGS="$HERE/.cache/bench"
mkdir -p "$LOGS"
stamp="$(date +%Y%m%dT%H%M%S)"

# run_site LOG: one site.yml run in $TREE; prints "seconds tasks ok changed failed skipped".
run_site() {
  local log="$1" started ended rc=0 recap
  started=$(date +%s.%N)
  (cd "$TREE" && ansible-playbook site.yml -i inventories/local --tags "$TAGS") >"$log" 2>&1 || rc=$?
  ended=$(date +%s.%N)
  if (( rc != 0 )); then
    echo "site.yml failed (rc $rc); last lines of $log:" >&2
    tail -n 30 "$log" >&2
    return 1
  fi
  recap="$(grep -E '^localhost +:' "$log" | tail -n 1)"
  printf '%s %d %s %s %s %s\n' "$(awk "BEGIN { printf \"%.1f\", $ended - $started }")" "$(grep -c '^TASK \[' "$log")" \
    "$(sed -n 's/.* ok=\([0-9]*\).*/\1/p' <<<"$recap")" "$(sed -n 's/.* changed=\([0-9]*\).*/\1/p' <<<"$recap")" \
    "$(sed -n 's/.* failed=\([0-9]*\).*/\1/p' <<<"$recap")" "$(sed -n 's/.* skipped=\([0-9]*\).*/\1/p' <<<"$recap")"
}

echo "tree: $TREE ($(git -C "$TREE" rev-parse --short HEAD 2>/dev/null || echo '?')); rehearsal: $ENV_FILE"
echo "converging: site.yml --tags $TAGS once (log $LOGS/$stamp-converge.log)"
result="$(run_site "$LOGS/$stamp-converge.log")" || exit 1
read -r seconds tasks ok changed failed skipped <<<"$result"
echo "  converge run: ${seconds} s, ${tasks} tasks, ok=${ok} changed=${changed} skipped=${skipped}"

status=0
for (( run = 1; run <= RUNS; run++ )); do
  log="$LOGS/$stamp-noop-$run.log"
  result="$(run_site "$log")" || exit 1
  read -r seconds tasks ok changed failed skipped <<<"$result"
  echo "no-op site.yml --tags $TAGS run $run: ${seconds} s, ${tasks} tasks executed, ok=${ok} changed=${changed} failed=${failed} skipped=${skipped} (log $log)"
  if (( changed != 0 )); then
    echo "  not a no-op: $changed change(s); see the 'changed:' lines in $log" >&2
    status=3
  fi
done
if (( TEARDOWN )); then
  echo "teardown: site.yml --tags teardown (log $LOGS/$stamp-teardown.log)"
  (cd "$TREE" && ansible-playbook site.yml -i inventories/local --tags teardown) >"$LOGS/$stamp-teardown.log" 2>&1 \
    || { echo "teardown failed; see $LOGS/$stamp-teardown.log" >&2; exit 1; }
fi
exit "$status"
