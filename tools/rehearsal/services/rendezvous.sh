#!/usr/bin/env bash
# The etcd that TorchElastic's etcd rendezvous (torchrun --rdzv-backend=etcd)
# talks to: a second etcd, the same binary as services/etcd.sh, with the v2 API
# on, on the usual etcd ports so host processes find it where they expect it.
RDZV_PORT="${TRAINIUM_RDZV_PORT:-2379}"
RDZV_PEER_PORT="${TRAINIUM_RDZV_PEER_PORT:-2380}"

# The v2 keys API answers only when --enable-v2 took effect.
rdzv_healthy() {
  http_ok "http://$HOST:$RDZV_PORT/v2/keys"
}

svc_rendezvous_up() {
  etcd_build
  etcd_command etcd-rendezvous "$STATE/etcd-rendezvous" "$RDZV_PORT" "$RDZV_PEER_PORT" --enable-v2=true
  ensure_daemon etcd-rendezvous rdzv_healthy 60 "$RDZV_PORT" -- "${ETCD_CMD[@]}"
}

svc_rendezvous_down() {
  stop_service etcd-rendezvous
  stop_port_leftover etcd-rendezvous "$RDZV_PORT" "$STATE/etcd-rendezvous"
}

svc_rendezvous_status() { pid_alive etcd-rendezvous && rdzv_healthy; }

svc_rendezvous_env() {
  echo "export TRAINIUM_RDZV_ENDPOINT=\"$HOST:$RDZV_PORT\""
}

svc_rendezvous_ports() { echo "$RDZV_PORT $RDZV_PEER_PORT"; }
