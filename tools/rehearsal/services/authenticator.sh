#!/usr/bin/env bash
# The EKS token authenticator stand-in (tools/rehearsal/eks_authenticator.py):
# kube-apiserver asks it about `k8s-aws-v1.` bearer tokens through a token
# webhook, so the collection authenticates to the rehearsal's cluster the way
# it does to EKS.
AUTHENTICATOR_PORT="${TRAINIUM_AUTHENTICATOR_PORT:-21362}"
AUTHENTICATOR_WEBHOOK="$STATE/authenticator/webhook.kubeconfig"

authenticator_healthy() {
  http_ok "http://$HOST:$AUTHENTICATOR_PORT/healthz"
}

svc_authenticator_up() {
  mkdir -p "$STATE/authenticator"
  # The webhook configuration kube-apiserver reads (kubeconfig format).
  cat >"$AUTHENTICATOR_WEBHOOK" <<CFG
apiVersion: v1
kind: Config
clusters:
  - name: eks-authenticator
    cluster:
      server: http://$HOST:$AUTHENTICATOR_PORT/authenticate
users:
  - name: kube-apiserver
    user: {}
contexts:
  - name: webhook
    context:
      cluster: eks-authenticator
      user: kube-apiserver
current-context: webhook
CFG
  ensure_daemon authenticator authenticator_healthy 30 "$AUTHENTICATOR_PORT" -- \
    env AWS_ENDPOINT_URL="http://$HOST:$MOTO_PORT" AWS_ACCESS_KEY_ID=rehearsal AWS_SECRET_ACCESS_KEY="$REHEARSAL_SECRET_KEY" \
    "$VENV/bin/python" "$ROOT/tools/rehearsal/eks_authenticator.py" "$HOST" "$AUTHENTICATOR_PORT"
}

svc_authenticator_down() {
  stop_service authenticator
  stop_port_leftover authenticator "$AUTHENTICATOR_PORT" "tools/rehearsal/eks_authenticator.py"
}

svc_authenticator_status() { pid_alive authenticator && authenticator_healthy; }

svc_authenticator_env() {
  echo "export TRAINIUM_REHEARSAL_AUTHENTICATOR_WEBHOOK=\"$AUTHENTICATOR_WEBHOOK\""
}

svc_authenticator_ports() { echo "$AUTHENTICATOR_PORT"; }
