#!/usr/bin/env bash
# Faults for the rehearsal's fake Trainium nodes (kwok) and their pods.
#   tools/rehearsal/fault.sh node-lose-neuron NODE   # the node reports 0 Neuron devices/cores
#   tools/rehearsal/fault.sh node-restore NODE       # ... and its real figures again
#   tools/rehearsal/fault.sh pod-fail NAMESPACE POD  # the pod goes to phase Failed
#   tools/rehearsal/fault.sh kill-worker NAMESPACE POD  # SIGKILL one worker process of the pod
#
# node-lose-neuron writes capacity/allocatable aws.amazon.com/neuron and
# aws.amazon.com/neuroncore = 0 through the node's status subresource, as the
# Neuron device plugin does when the devices vanish. kwok's node stages copy
# capacity/allocatable and never change them; the annotation
# rehearsal.trainium.eks/neuron-lost (holding the figures to restore) makes
# tools/rehearsal/nodes.py, run by every `rehearsal.sh up`, keep the fault.
# pod-fail sets the annotation rehearsal.trainium.eks/fail: "true"; the kwok
# stage rehearsal-pod-fail (tools/rehearsal/kwok/stages/) then fails the pod.
# kill-worker needs a pod the pod runner runs (label trainium.eks/workload): it
# SIGKILLs one worker process under the pod's torchrun (a python child of the
# launcher), or the pod's main process when there is no torchrun, and prints
# what it killed; what follows (torchrun's exit, the pod's end) is the
# ordinary course.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE="${TRAINIUM_REHEARSAL_DIR:-$ROOT/.rehearsal}"
export KUBECONFIG="${KUBECONFIG:-$STATE/kubeconfig}"
KUBECTL="$STATE/bin/kubectl"
[[ -x "$KUBECTL" ]] || KUBECTL="$(command -v kubectl)"
LOST=rehearsal.trainium.eks/neuron-lost
NEURON=aws.amazon.com/neuron
NEURONCORE=aws.amazon.com/neuroncore

usage() {
  sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

kctl() { "$KUBECTL" "$@"; }

# node_figure NODE WHERE RESOURCE: status.WHERE[RESOURCE] of the node.
node_figure() {
  kctl get node "$1" -o "jsonpath={.status.$2['${3//./\\.}']}"
}

# status_patch NEURON NEURONCORE: a merge patch for capacity and allocatable.
status_patch() {
  printf '{"status":{"capacity":{"%s":"%s","%s":"%s"},"allocatable":{"%s":"%s","%s":"%s"}}}' \
    "$NEURON" "$1" "$NEURONCORE" "$2" "$NEURON" "$1" "$NEURONCORE" "$2"
}

# wait_allocatable NODE NEURON: until the API shows the figure (kwok may patch
# the status concurrently; a lost update is written again).
wait_allocatable() {
  local node="$1" want="$2" patch="$3" try
  for try in $(seq 1 20); do
    [[ "$(node_figure "$node" allocatable "$NEURON")" == "$want" ]] && return 0
    if (( try % 5 == 0 )); then kctl patch node "$node" --subresource=status --type=merge -p "$patch" >/dev/null; fi
    sleep 0.5
  done
  echo "fault.sh: node $node still does not report $NEURON $want" >&2
  return 1
}

node_lose_neuron() {
  local node="$1" neuron cores saved patch
  kctl get node "$node" -o name >/dev/null
  saved="$(kctl get node "$node" -o "jsonpath={.metadata.annotations['${LOST//./\\.}']}")"
  if [[ -z "$saved" ]]; then
    neuron="$(node_figure "$node" capacity "$NEURON")"
    cores="$(node_figure "$node" capacity "$NEURONCORE")"
    saved="$neuron/$cores"
    kctl annotate node "$node" --overwrite "$LOST=$saved" >/dev/null
  fi
  patch="$(status_patch 0 0)"
  kctl patch node "$node" --subresource=status --type=merge -p "$patch" >/dev/null
  wait_allocatable "$node" 0 "$patch"
  echo "node $node: $NEURON and $NEURONCORE now 0 (were ${saved%/*} and ${saved#*/})"
}

node_restore() {
  local node="$1" saved patch
  saved="$(kctl get node "$node" -o "jsonpath={.metadata.annotations['${LOST//./\\.}']}")"
  if [[ -z "$saved" ]]; then
    echo "node $node: no Neuron fault to restore"
    return 0
  fi
  patch="$(status_patch "${saved%/*}" "${saved#*/}")"
  kctl patch node "$node" --subresource=status --type=merge -p "$patch" >/dev/null
  wait_allocatable "$node" "${saved%/*}" "$patch"
  kctl annotate node "$node" "$LOST-" >/dev/null
  echo "node $node: $NEURON ${saved%/*}, $NEURONCORE ${saved#*/} again"
}

pod_fail() {
  local namespace="$1" pod="$2"
  kctl -n "$namespace" annotate pod "$pod" --overwrite rehearsal.trainium.eks/fail=true >/dev/null
  echo "pod $namespace/$pod: marked to fail (kwok stage rehearsal-pod-fail)"
}

case "${1:-}" in
  node-lose-neuron) [[ $# -eq 2 ]] || usage; node_lose_neuron "$2" ;;
  node-restore) [[ $# -eq 2 ]] || usage; node_restore "$2" ;;
  pod-fail) [[ $# -eq 3 ]] || usage; pod_fail "$2" "$3" ;;
  kill-worker)
    [[ $# -eq 3 ]] || usage
    TRAINIUM_REHEARSAL_DIR="$STATE" "${VENV:-$ROOT/.venv}/bin/python" "$ROOT/tools/rehearsal/pod_runner.py" kill-worker "$2" "$3"
    ;;
  *) usage ;;
esac
