#!/usr/bin/env bash
# etcd for the Kubernetes control plane (kube-apiserver's storage), built from
# the wrapper module tools/rehearsal/go/etcd. It stays on etcd 3.5 because the
# TorchElastic rendezvous etcd (services/rendezvous.sh, same binary) needs the
# v2 API that etcd 3.6 removed; Kubernetes 1.35 supports etcd 3.5.
ETCD_VERSION=v3.5.35
KUBE_ETCD_PORT="${TRAINIUM_KUBE_ETCD_PORT:-2479}"
KUBE_ETCD_PEER_PORT="${TRAINIUM_KUBE_ETCD_PEER_PORT:-2480}"

# Builds etcd once per machine (cached by version) and links $STATE/bin/etcd.
etcd_build() {
  go_build_cached etcd "$ETCD_VERSION" "$ROOT/tools/rehearsal/go/etcd" go.etcd.io/etcd/server/v3
}

# etcd_command NAME DATA-DIR CLIENT-PORT PEER-PORT [EXTRA-FLAGS...]: sets
# ETCD_CMD to a single-member etcd on loopback, plain HTTP (nothing leaves
# 127.0.0.1). Also used by services/rendezvous.sh.
etcd_command() {
  local name="$1" data="$2" client="$3" peer="$4"
  shift 4
  ETCD_CMD=("$STATE/bin/etcd" --name "$name" --data-dir "$data" \
    --listen-client-urls "http://$HOST:$client" --advertise-client-urls "http://$HOST:$client" \
    --listen-peer-urls "http://$HOST:$peer" --initial-advertise-peer-urls "http://$HOST:$peer" \
    --initial-cluster "$name=http://$HOST:$peer" --initial-cluster-state new \
    --initial-cluster-token "$name" "$@")
}

kube_etcd_healthy() {
  curl -fsS --max-time 5 "http://$HOST:$KUBE_ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'
}

svc_etcd_up() {
  etcd_build
  etcd_command etcd-kube "$STATE/etcd-kube" "$KUBE_ETCD_PORT" "$KUBE_ETCD_PEER_PORT"
  ensure_daemon etcd-kube kube_etcd_healthy 60 "$KUBE_ETCD_PORT" -- "${ETCD_CMD[@]}"
}

svc_etcd_down() {
  stop_service etcd-kube
  stop_port_leftover etcd-kube "$KUBE_ETCD_PORT" "$STATE/etcd-kube"
}

svc_etcd_status() { pid_alive etcd-kube && kube_etcd_healthy; }

svc_etcd_env() {
  echo "export TRAINIUM_KUBE_ETCD_ENDPOINT=\"http://$HOST:$KUBE_ETCD_PORT\""
}

svc_etcd_ports() { echo "$KUBE_ETCD_PORT $KUBE_ETCD_PEER_PORT"; }
