#!/usr/bin/env bash
# Molecule's scenarios on a rehearsal stack of their own, so that they can run
# beside pytest (tools/run-tests.sh) without sharing an AWS account, a
# Kubernetes cluster, a registry or a rendezvous etcd with pytest's tests.
#   tools/molecule-lane.sh [molecule test arguments]    (default: --all)
# The stack lives in .build/molecule-stack (TRAINIUM_MOLECULE_STACK_DIR) on
# loopback ports of its own (ports.env there), kept across runs while they are
# free (its kubeconfigs and certificates name them); it is started here and
# always stopped at the end. Binaries, Debian packages and the training
# virtualenv come from the same caches as the shared stack's.
# Exit code: Molecule's; 3 when the stack did not start (nothing ran).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
BIN="${VENV:-$ROOT/.venv}/bin"
REHEARSAL="$ROOT/tools/rehearsal/rehearsal.sh"
STATE="${TRAINIUM_MOLECULE_STACK_DIR:-$ROOT/.build/molecule-stack}"
# Every port a rehearsal service reads (tools/rehearsal/services/*.sh).
PORT_VARIABLES=(TRAINIUM_MOTO_PORT TRAINIUM_KUBE_ETCD_PORT TRAINIUM_KUBE_ETCD_PEER_PORT TRAINIUM_AUTHENTICATOR_PORT
  TRAINIUM_KUBE_API_PORT TRAINIUM_KUBE_CM_PORT TRAINIUM_KUBE_SCHED_PORT TRAINIUM_KWOK_PORT
  TRAINIUM_VOLCANO_SCHED_HEALTH_PORT TRAINIUM_VOLCANO_CM_HEALTH_PORT
  TRAINIUM_RDZV_PORT TRAINIUM_RDZV_PEER_PORT TRAINIUM_REGISTRY_PORT)

say() { printf '[molecule-lane] %s\n' "$*"; }

# Nothing of another stack may leak in: the shared stack's env.sh may have
# been sourced by the caller.
unset KUBECONFIG K8S_AUTH_KUBECONFIG AWS_ENDPOINT_URL TRAINIUM_AWS_ENDPOINT_URL TRAINIUM_REHEARSAL_SHARED_DIR \
  TRAINIUM_REHEARSAL_REGISTRY TRAINIUM_REGISTRY TRAINIUM_REGISTRY_URL TRAINIUM_REGISTRY_PASSWORD \
  TRAINIUM_REGISTRY_CA_FILE TRAINIUM_REGISTRY_CERT_DIR TRAINIUM_BUILDAH_OPTS TRAINIUM_REHEARSAL_BASE_IMAGE \
  TRAINIUM_KUBE_APISERVER TRAINIUM_KUBE_CA_FILE TRAINIUM_KUBE_ETCD_ENDPOINT TRAINIUM_RDZV_ENDPOINT TRAINIUM_KWOK_URL \
  TRAINIUM_REHEARSAL_AUTHENTICATOR_WEBHOOK TRAINIUM_VOLCANO_MANIFEST_URL "${PORT_VARIABLES[@]}"
export PATH="$BIN:$PATH" ANSIBLE_CONFIG="$ROOT/ansible.cfg" TRAINIUM_REHEARSAL_DIR="$STATE"

stack_down() {
  [[ -f "$STATE/ports.env" ]] || return 0
  # shellcheck disable=SC1091
  ( set -a && source "$STATE/ports.env" && set +a && "$REHEARSAL" down )
}

# A stack an earlier run left (stopped before its cleanup) goes first.
stack_down >/dev/null 2>&1

# The ports: the recorded ones when every one of them is free, else new ones
# (then the state starts afresh: its kubeconfigs name the old ports).
ports_free() {
  python - "$@" <<'EOF'
import socket, sys
for port in map(int, sys.argv[1:]):
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            sys.exit(1)
EOF
}
recorded=()
if [[ -f "$STATE/ports.env" ]]; then
  mapfile -t recorded < <(sed -n 's/^export TRAINIUM_[A-Z_]*PORT="\([0-9]*\)"$/\1/p' "$STATE/ports.env")
fi
if (( ${#recorded[@]} != ${#PORT_VARIABLES[@]} )) || ! ports_free "${recorded[@]}"; then
  rm -rf "$STATE" && mkdir -p "$STATE" || exit 3
  # Below the kernel's ephemeral range (32768 on), where pytest's private motos take theirs.
  python - "${PORT_VARIABLES[@]}" >"$STATE/ports.env" <<'EOF' || { say "no free ports for the stack"; exit 3; }
import socket, sys
names, found = sys.argv[1:], []
for port in range(30100, 31000):
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            continue
    found.append(port)
    if len(found) == len(names):
        break
else:
    sys.exit(1)
for name, port in zip(names, found):
    print(f'export {name}="{port}"')
EOF
fi
# shellcheck disable=SC1091
source "$STATE/ports.env"

trap 'say "stopping the stack"; stack_down' EXIT
# Stopped (run-tests.sh stops its background suites with SIGTERM): the EXIT trap still takes the stack down.
trap 'exit 143' TERM
trap 'exit 130' INT
started=$(date +%s)
say "starting a rehearsal stack of its own in $STATE (moto on $TRAINIUM_MOTO_PORT, kube-apiserver on $TRAINIUM_KUBE_API_PORT)"
if ! "$REHEARSAL" up; then
  say "the stack did not start; nothing ran"
  exit 3
fi
say "stack up in $(( $(date +%s) - started ))s"
# shellcheck disable=SC1091
source "$STATE/env.sh"

# Molecule keeps each scenario's state (prepared, converged) under its cache
# directory by the project directory's name: every run starts from none.
molecule reset --all >/dev/null 2>&1 || say "could not reset Molecule's scenario state"
if (( $# == 0 )); then set -- --all; fi
# Molecule's output as it comes, then the seconds each scenario and each of
# its actions took (from its "➜ <action>: Executing" lines), for the CI log.
molecule test "$@" 2>&1 | python -u -c '
import io, re, sys, time
began, spent, current = time.monotonic(), {}, None
# Whatever bytes come, every line is passed on (the lane must never lose its output to the timing).
for line in io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"):
    sys.stdout.write(line)
    sys.stdout.flush()
    found = re.search(r"(\S+) \u279c (\w+): Executing", re.sub(r"\x1b\[[0-9;]*m", "", line))
    now = time.monotonic()
    if current:
        spent[current[0]][current[1]] = spent[current[0]].get(current[1], 0) + now - current[2]
        current = (current[0], current[1], now)
    if found:
        spent.setdefault(found[1], {})
        current = (found[1], found[2], now)
rows = sorted(spent.items(), key=lambda item: -sum(item[1].values()))
print(f"[molecule-lane] seconds per scenario ({time.monotonic() - began:.0f} s in all): " + "; ".join(
    f"{name} {sum(actions.values()):.0f} (" + ", ".join(f"{action} {seconds:.0f}" for action, seconds in actions.items()) + ")"
    for name, actions in rows))
'
exit "${PIPESTATUS[0]}"
