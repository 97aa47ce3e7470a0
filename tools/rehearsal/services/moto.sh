#!/usr/bin/env bash
# moto server: the AWS APIs, with the additions in tools/rehearsal/moto_ext.py.
MOTO_PORT="${TRAINIUM_MOTO_PORT:-5000}"
# The fake secret key of the rehearsal account (see svc_moto_env).
REHEARSAL_SECRET_KEY=fake-secret-key-0000-only-for-loopback

moto_healthy() {
  # A busy server may take a moment to answer: three tries before "unhealthy".
  # The dashboard page (static, served by moto's own app), not data.json: that
  # one serializes every resource of every backend, and after the end-to-end
  # tests on two loaded cores it took longer than curl's 5 s three times over
  # (a CI run restarted a healthy moto and failed the quick-second-up test).
  local try
  for try in 1 2 3; do
    http_ok "http://$HOST:$MOTO_PORT/moto-api/" && return 0
    sleep "$try"
  done
  return 1
}

svc_moto_up() {
  # EKS DescribeCluster answers with the rehearsal's kube-apiserver and CA
  # once they exist (moto_ext.py reads these on every call). AWS managed IAM
  # policies (AmazonEKSClusterPolicy, ...) exist in every AWS account; moto
  # loads them only when asked. A number in $STATE/aws-time-scale makes
  # creations take AWS's time at that scale (moto_ext_timing.py; benchmarks).
  # Zones listed in $STATE/eks-full-zones refuse EKS control planes (moto_ext_faults.py).
  ensure_daemon moto moto_healthy 60 "$MOTO_PORT" -- \
    env MOTO_IAM_LOAD_MANAGED_POLICIES=true \
    TRAINIUM_REHEARSAL_KUBE_ENDPOINT="https://$HOST:${KUBE_API_PORT:-6443}" \
    TRAINIUM_REHEARSAL_KUBE_CA_FILE="$STATE/pki/ca.crt" \
    TRAINIUM_REHEARSAL_AWS_TIME_SCALE_FILE="$STATE/aws-time-scale" \
    TRAINIUM_REHEARSAL_EKS_FULL_ZONES_FILE="$STATE/eks-full-zones" \
    "$VENV/bin/python" "$ROOT/tools/rehearsal/moto_server.py" "$HOST" "$MOTO_PORT"
}

svc_moto_down() {
  stop_service moto
  stop_port_leftover moto "$MOTO_PORT" "tools/rehearsal/moto_server.py"
}

svc_moto_status() { pid_alive moto && moto_healthy; }

svc_moto_env() {
  cat <<ENV
export TRAINIUM_AWS_ENDPOINT_URL="http://$HOST:$MOTO_PORT"
export AWS_ENDPOINT_URL="http://$HOST:$MOTO_PORT"
# moto accepts any credentials; these are fake and only ever sent to loopback.
# The secret must not be part of any resource name: Ansible masks a secret's
# value wherever it appears in output, so "rehearsal" would turn the cluster
# trn-rehearsal into trn-******** in every returned name and ARN.
export AWS_ACCESS_KEY_ID=rehearsal
export AWS_SECRET_ACCESS_KEY=${REHEARSAL_SECRET_KEY}
export AWS_DEFAULT_REGION=us-west-2
unset AWS_PROFILE AWS_SESSION_TOKEN
ENV
}

svc_moto_ports() { echo "$MOTO_PORT"; }
