#!/usr/bin/env bash
# kwok: the fake Trainium worker nodes. Built from sigs.k8s.io/kwok (wrapper
# module tools/rehearsal/go/kwok); it manages only nodes labelled type=kwok.
# Stages: kwok's own "fast" node and pod stages, read from its pinned module in
# the Go module cache (pods go Running, deleted pods go away; kwok's
# pod-complete is left out because it would finish Volcano's pods at once),
# plus the rehearsal's in tools/rehearsal/kwok/stages/ (a pod Succeeds or
# Fails on request, by annotation). The nodes themselves come from the inventory's
# node pools: tools/rehearsal/nodes.py, run on every `up` (idempotent).
# Needs services/kube.sh (apiserver, admin kubeconfig, kubectl, PKI) and moto.
#
# Pod logs: the fake nodes' address is 127.0.0.1 (InternalIP, set by kwok's
# --node-ip and by nodes.py) with kwok's own port as their kubelet port
# (daemonEndpoints), and kube-apiserver dials InternalIP only
# (--kubelet-preferred-address-types), so `kubectl logs` and the API's pods/log
# reach kwok on loopback and nothing dials a private-range address. kwok serves
# its kubelet API over TLS on that port with a certificate of the rehearsal's
# Kubernetes CA ($PKI/kwok-kubelet.*, made by kube.sh), plain HTTP on the same
# port (health). What it serves as a pod's log is a Logs object
# (kwok.x-k8s.io/v1alpha1, CRD mode: --enable-crds=Logs, the CRD applied from
# kwok's module) that the pod runner (services/podrunner.sh) creates per pod.
KWOK_VERSION=v0.8.0
KWOK_PORT="${TRAINIUM_KWOK_PORT:-10247}"
KWOK_INVENTORY="${TRAINIUM_REHEARSAL_INVENTORY:-$ROOT/inventories/local}"

kwok_healthy() { http_ok "http://$HOST:$KWOK_PORT/healthz"; }

kwok_module_dir() {
  (cd "$ROOT/tools/rehearsal/go/kwok" && "$GO" mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
    "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
}

# The CRDs kwok watches in CRD mode (--enable-crds), from its pinned module.
KWOK_CRDS=(Logs)
kwok_crds() {
  local dir
  dir="$(kwok_module_dir)"
  "$STATE/bin/kubectl" --kubeconfig="$STATE/kubeconfig" apply --server-side --force-conflicts \
    --field-manager=rehearsal-kwok -f "$dir/kustomize/crd/bases/kwok.x-k8s.io_logs.yaml" >/dev/null
  "$STATE/bin/kubectl" --kubeconfig="$STATE/kubeconfig" wait --for=condition=Established --timeout=60s \
    crd/logs.kwok.x-k8s.io >/dev/null
}

# The kwok nodes for the inventory's node pools, with the AWS figures that the
# rehearsal's EC2 endpoint (moto) reports.
kwok_nodes() {
  (
    if declare -F svc_moto_env >/dev/null; then eval "$(svc_moto_env)"; fi
    export KUBECONFIG="$STATE/kubeconfig" TRAINIUM_REHEARSAL_DIR="$STATE" TRAINIUM_KWOK_PORT="$KWOK_PORT"
    "$VENV/bin/python" "$ROOT/tools/rehearsal/nodes.py" "$KWOK_INVENTORY"
  ) | while IFS= read -r line; do say "$line"; done
}

KWOK_FOLLOW_HEARTBEAT="$RUN/kwok-nodegroups.heartbeat"
kwok_follower_healthy() {
  [[ -f "$KWOK_FOLLOW_HEARTBEAT" ]] || return 1
  (( $(date +%s) - $(stat -c %Y "$KWOK_FOLLOW_HEARTBEAT") < 30 ))
}

# The follower: pools sized by their node groups (nodes.py --follow, a poll every 2 s).
kwok_follower() {
  (
    if declare -F svc_moto_env >/dev/null; then eval "$(svc_moto_env)"; fi
    # Restart it when its code or inventory changed.
    local sum
    sum="$( (cat "$ROOT/tools/rehearsal/nodes.py"; echo "$KWOK_INVENTORY") | sha256sum | cut -d' ' -f1)"
    if pid_alive kwok-nodegroups && [[ "$(cat "$RUN/kwok-nodegroups.sum" 2>/dev/null)" != "$sum" ]]; then
      say "node group follower code or inventory changed; restarting it"
      stop_service kwok-nodegroups
    fi
    echo "$sum" >"$RUN/kwok-nodegroups.sum"
    ensure_daemon kwok-nodegroups kwok_follower_healthy 60 "" -- \
      env KUBECONFIG="$STATE/kubeconfig" TRAINIUM_REHEARSAL_DIR="$STATE" TRAINIUM_KWOK_PORT="$KWOK_PORT" \
      "$VENV/bin/python" "$ROOT/tools/rehearsal/nodes.py" "$KWOK_INVENTORY" --follow 2 --heartbeat "$KWOK_FOLLOW_HEARTBEAT"
  )
}

# The stage files kwok loads, one per line.
kwok_stage_files() {
  local dir
  dir="$(kwok_module_dir)"
  printf '%s\n' \
    "$dir/kustomize/stage/node/fast/node-initialize.yaml" \
    "$dir/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
    "$dir/kustomize/stage/pod/fast/pod-ready.yaml" \
    "$dir/kustomize/stage/pod/fast/pod-delete.yaml" \
    "$ROOT"/tools/rehearsal/kwok/stages/*.yaml
}

svc_kwok_up() {
  go_build_cached kwok "$KWOK_VERSION" "$ROOT/tools/rehearsal/go/kwok" sigs.k8s.io/kwok/cmd/kwok \
    "-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}"
  local stages=() config_args=() sum
  mapfile -t stages < <(kwok_stage_files)
  for file in "${stages[@]}"; do config_args+=(--config="$file"); done
  # Node leases renewed every 10 s of a 40 s lease: the heartbeat-with-lease
  # stage refreshes the node's status only every 10 minutes and counts on the
  # lease in between; without it the node lifecycle controller saw every node
  # go silent for a moment each 10 minutes and marked its pods NotReady.
  local flags=(--node-lease-duration-seconds=40
    --node-ip="$HOST" --node-port="$KWOK_PORT"
    --tls-cert-file="$PKI/kwok-kubelet.crt" --tls-private-key-file="$PKI/kwok-kubelet.key"
    --enable-crds="$(IFS=,; echo "${KWOK_CRDS[*]}")")
  kwok_crds
  # kwok reads its stages and flags once: restart it when they changed.
  sum="$( (cat "${stages[@]}"; printf '%s\n' "${flags[@]}") | sha256sum | cut -d' ' -f1)"
  if pid_alive kwok && [[ "$(cat "$RUN/kwok.stages" 2>/dev/null)" != "$sum" ]]; then
    say "kwok stages or flags changed; restarting kwok"
    stop_service kwok
  fi
  echo "$sum" >"$RUN/kwok.stages"
  ensure_daemon kwok kwok_healthy 60 "$KWOK_PORT" -- \
    "$STATE/bin/kwok" \
    --kubeconfig="$STATE/kubeconfig" \
    "${config_args[@]}" \
    --manage-all-nodes=false \
    --manage-nodes-with-label-selector=type=kwok \
    --server-address="$HOST:$KWOK_PORT" \
    --cidr=10.244.0.0/16 \
    "${flags[@]}"
  kwok_nodes
  kwok_follower
}

svc_kwok_down() {
  stop_service kwok-nodegroups
  rm -f "$RUN/kwok-nodegroups.sum" "$KWOK_FOLLOW_HEARTBEAT"
  stop_service kwok
  rm -f "$RUN/kwok.stages"
  stop_port_leftover kwok "$KWOK_PORT" "$STATE/kubeconfig"
}

svc_kwok_status() { pid_alive kwok && kwok_healthy && pid_alive kwok-nodegroups && kwok_follower_healthy; }

svc_kwok_env() {
  echo "export TRAINIUM_KWOK_URL=\"http://$HOST:$KWOK_PORT\""
  echo "export TRAINIUM_KWOK_PORT=\"$KWOK_PORT\""
}

svc_kwok_ports() { echo "$KWOK_PORT"; }
