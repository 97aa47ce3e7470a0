#!/usr/bin/env bash
# The pod runner (tools/rehearsal/pod_runner.py): the kubelet of the fake
# (kwok) nodes for workload pods only (label trainium.eks/workload): it pulls
# the pod's image from the rehearsal registry, runs the container's command on
# this machine with the pod's environment, serves its output as the pod's log
# (a kwok Logs object) and ends the pod through kwok's stages when the process
# exits. Needs kube, rendezvous, kwok (Logs CRD) and registry up first.
#   $STATE/pods/<uid>/       one directory per pod: <container>.log (CRI
#                            format), pod.json, spec.json, process.json (pid,
#                            pgid), exit-code
#   $STATE/images/<digest>/  extracted images
#   $STATE/shared/<ns>/<claim>/  the volume of a PersistentVolumeClaim
# Healthy: its pid is alive and it touched $RUN/podrunner.heartbeat in the
# last 30 s (it does every 2 s once it has listed the pods).
PODRUNNER_HEARTBEAT="$RUN/podrunner.heartbeat"

podrunner_healthy() {
  [[ -f "$PODRUNNER_HEARTBEAT" ]] || return 1
  (( $(date +%s) - $(stat -c %Y "$PODRUNNER_HEARTBEAT") < 30 ))
}

# The virtualenv whose bin/ is on the PATH of pod commands (torch): the path
# tools/rehearsal/train-venv.sh prints last, else TRAINIUM_TRAIN_VENV, else
# the collection's .venv.
podrunner_train_venv() {
  local script="$ROOT/tools/rehearsal/train-venv.sh" venv=""
  if [[ -x "$script" ]]; then
    venv="$("$script" 2>"$LOGS/train-venv.err.log" | tee "$LOGS/train-venv.log" | tail -n 1)" || venv=""
    if [[ -z "$venv" || ! -d "$venv" ]]; then
      say "pod runner: $script gave no virtualenv (see $LOGS/train-venv*.log); using ${TRAINIUM_TRAIN_VENV:-$VENV}"
      venv=""
    fi
  fi
  echo "${venv:-${TRAINIUM_TRAIN_VENV:-$VENV}}"
}

svc_podrunner_up() {
  mkdir -p "$STATE/pods" "$STATE/images" "$STATE/shared"
  (
    for service in registry rendezvous; do
      if declare -F "svc_${service}_env" >/dev/null; then eval "$("svc_${service}_env")"; fi
    done
    export TRAINIUM_REHEARSAL_DIR="$STATE" TRAINIUM_REHEARSAL_SHARED_DIR="$STATE/shared" KUBECONFIG="$STATE/kubeconfig"
    TRAINIUM_TRAIN_VENV="$(podrunner_train_venv)"
    export TRAINIUM_TRAIN_VENV
    # Restart the runner when its code or train venv changed (pods keep running:
    # their shims are in sessions of their own, and a new runner adopts them).
    local sum
    sum="$( (cat "$ROOT/tools/rehearsal/pod_runner.py"; echo "$TRAINIUM_TRAIN_VENV") | sha256sum | cut -d' ' -f1)"
    if pid_alive podrunner && [[ "$(cat "$RUN/podrunner.sum" 2>/dev/null)" != "$sum" ]]; then
      say "pod runner code or train venv changed; restarting it"
      stop_service podrunner
    fi
    echo "$sum" >"$RUN/podrunner.sum"
    ensure_daemon podrunner podrunner_healthy 60 "" -- \
      "$VENV/bin/python" "$ROOT/tools/rehearsal/pod_runner.py" run \
      --kubeconfig="$STATE/kubeconfig" --train-venv="$TRAINIUM_TRAIN_VENV" --heartbeat="$PODRUNNER_HEARTBEAT"
  )
}

svc_podrunner_down() {
  stop_service podrunner
  rm -f "$PODRUNNER_HEARTBEAT" "$RUN/podrunner.sum"
  local leftover
  leftover="$(pgrep -f -- "tools/rehearsal/pod_runner.py run --kubeconfig=$STATE/kubeconfig" || true)"
  for pid in $leftover; do stop_pid "pod runner without pid file" "$pid"; done
  # The pods' processes and their shims (their command lines name $STATE/pods).
  TRAINIUM_REHEARSAL_DIR="$STATE" "$VENV/bin/python" "$ROOT/tools/rehearsal/pod_runner.py" stop-all |
    while IFS= read -r line; do say "$line"; done
}

svc_podrunner_status() { pid_alive podrunner && podrunner_healthy; }

svc_podrunner_env() {
  echo "export TRAINIUM_REHEARSAL_SHARED_DIR=\"$STATE/shared\""
}

svc_podrunner_ports() { :; }
