#!/usr/bin/env bash
# The Kubernetes control plane that stands in for EKS: kube-apiserver,
# kube-controller-manager and kube-scheduler, plus kubectl, all built from
# k8s.io/kubernetes at one version (wrapper module tools/rehearsal/go/kubernetes),
# with TLS, client-certificate kubeconfigs and RBAC on. Storage is the etcd of
# services/etcd.sh, which must be up first.
KUBE_VERSION=v1.35.4
KUBE_API_PORT="${TRAINIUM_KUBE_API_PORT:-6443}"
KUBE_CM_PORT="${TRAINIUM_KUBE_CM_PORT:-10257}"
KUBE_SCHED_PORT="${TRAINIUM_KUBE_SCHED_PORT:-10259}"
KUBE_SERVICE_CIDR=10.96.0.0/16
KUBE_SERVICE_IP=10.96.0.1
PKI="$STATE/pki"

# The version stamp `kubectl version` and /version report (what the release
# build scripts set).
kube_ldflags() {
  local minor="${KUBE_VERSION#v1.}" flags="" pkg
  minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z"
  done
  echo "${flags# }"
}

kube_build() {
  local cmd ldflags
  ldflags="$(kube_ldflags)"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    go_build_cached "$cmd" "$KUBE_VERSION" "$ROOT/tools/rehearsal/go/kubernetes" "k8s.io/kubernetes/cmd/$cmd" "$ldflags"
  done
}

# pki_cert NAME SUBJECT EXTENSIONS: a key and a certificate signed by the
# rehearsal CA, made once.
pki_cert() {
  local name="$1" subject="$2" extensions="$3"
  [[ -s "$PKI/$name.crt" && -s "$PKI/$name.key" ]] && return 0
  openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -out "$PKI/$name.csr" \
    -subj "$subject" 2>/dev/null
  printf '%s\n' "$extensions" >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
  chmod 600 "$PKI/$name.key"
}

client_ext() {
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=clientAuth"
}

# pki_kubeconfig FILE CERT-NAME USER: a self-contained kubeconfig (data
# embedded) for https://127.0.0.1:6443 with a client certificate.
pki_kubeconfig() {
  local file="$1" cert="$2" user="$3"
  cat >"$file.partial" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: rehearsal
  cluster:
    server: https://$HOST:$KUBE_API_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$cert.crt")
    client-key-data: $(base64 -w0 "$PKI/$cert.key")
contexts:
- name: rehearsal
  context:
    cluster: rehearsal
    user: $user
current-context: rehearsal
KUBECONFIG
  chmod 600 "$file.partial"
  mv "$file.partial" "$file"
}

# Everything is made once; delete $STATE/pki to start over.
kube_pki() {
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  if [[ ! -s "$PKI/ca.crt" || ! -s "$PKI/ca.key" ]]; then
    say "creating the rehearsal Kubernetes CA and certificates in $PKI"
    # Nothing signed by an earlier CA survives a new one, running daemons included.
    svc_kube_down
    rm -f "$PKI"/*.crt "$PKI"/*.key "$PKI"/*.kubeconfig "$PKI/ca.srl" "$STATE/kubeconfig"
    printf '%s\n' "[req]" "distinguished_name=dn" "[dn]" "[v3_ca]" "basicConstraints=critical,CA:TRUE" \
      "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" "subjectKeyIdentifier=hash" >"$PKI/ca.cnf"
    openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 3650 -sha256 \
      -subj "/CN=trainium-eks-rehearsal-ca" -config "$PKI/ca.cnf" -extensions v3_ca 2>/dev/null
    rm -f "$PKI/ca.cnf"
    chmod 600 "$PKI/ca.key"
  fi
  pki_cert apiserver "/CN=kube-apiserver" "$(printf '%s\n' "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:$HOST,IP:$KUBE_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local")"
  pki_cert admin "/O=system:masters/CN=rehearsal-admin" "$(client_ext)"
  pki_cert controller-manager "/CN=system:kube-controller-manager" "$(client_ext)"
  pki_cert scheduler "/CN=system:kube-scheduler" "$(client_ext)"
  pki_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$(client_ext)"
  # The serving certificate of kwok's kubelet API (services/kwok.sh): the fake
  # nodes' address is 127.0.0.1, and kube-apiserver verifies it against this CA.
  pki_cert kwok-kubelet "/CN=kwok-kubelet" "$(printf '%s\n' "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:$HOST,DNS:localhost")"
  if [[ ! -s "$PKI/sa.key" || ! -s "$PKI/sa.pub" ]]; then
    openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
    chmod 600 "$PKI/sa.key"
  fi
  [[ -s "$STATE/kubeconfig" ]] || pki_kubeconfig "$STATE/kubeconfig" admin rehearsal-admin
  [[ -s "$PKI/controller-manager.kubeconfig" ]] ||
    pki_kubeconfig "$PKI/controller-manager.kubeconfig" controller-manager system:kube-controller-manager
  [[ -s "$PKI/scheduler.kubeconfig" ]] || pki_kubeconfig "$PKI/scheduler.kubeconfig" scheduler system:kube-scheduler
}

kube_apiserver_healthy() {
  http_ok --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://$HOST:$KUBE_API_PORT/readyz"
}
kube_cm_healthy() { http_ok -k "https://$HOST:$KUBE_CM_PORT/healthz"; }
kube_scheduler_healthy() { http_ok -k "https://$HOST:$KUBE_SCHED_PORT/healthz"; }

# Extra kube-apiserver flags. With services/authenticator.sh loaded (and, for
# its file to exist, started before kube), tokens are also checked by its
# webhook, as aws-iam-authenticator does on EKS.
kube_apiserver_extra_args() {
  KUBE_APISERVER_EXTRA_ARGS=()
  if [[ -n "${AUTHENTICATOR_WEBHOOK:-}" && -s "$AUTHENTICATOR_WEBHOOK" ]]; then
    KUBE_APISERVER_EXTRA_ARGS+=(
      --authentication-token-webhook-config-file="$AUTHENTICATOR_WEBHOOK"
      --authentication-token-webhook-version=v1
    )
  fi
}

svc_kube_up() {
  kube_build
  kube_pki
  kube_apiserver_extra_args
  # shellcheck disable=SC2054 # commas inside flag values (--authorization-mode=Node,RBAC)
  local apiserver=(
    "$STATE/bin/kube-apiserver" \
    --bind-address="$HOST" --advertise-address="$HOST" --secure-port="$KUBE_API_PORT" \
    --etcd-servers="http://$HOST:${KUBE_ETCD_PORT:-2479}" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" \
    --kubelet-preferred-address-types=InternalIP \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --allow-privileged=true \
    --service-cluster-ip-range="$KUBE_SERVICE_CIDR" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --profiling=false "${KUBE_APISERVER_EXTRA_ARGS[@]}"
  )
  # The apiserver reads its flags once: restart it when they changed (a
  # running stack picks up e.g. the kubelet address flags on the next up).
  local sum
  sum="$(printf '%s\n' "${apiserver[@]}" | sha256sum | cut -d' ' -f1)"
  if pid_alive kube-apiserver && [[ "$(cat "$RUN/kube-apiserver.flags" 2>/dev/null)" != "$sum" ]]; then
    say "kube-apiserver flags changed; restarting it"
    stop_service kube-apiserver
  fi
  echo "$sum" >"$RUN/kube-apiserver.flags"
  ensure_daemon kube-apiserver kube_apiserver_healthy 90 "$KUBE_API_PORT" -- "${apiserver[@]}"
  # --node-monitor-grace-period: kwok renews the fake nodes' leases from a
  # process that a loaded 2-core machine can starve for more than the default
  # 50 s; the node lifecycle controller then marks the nodes NotReady and their
  # pods not Ready, and kwok (unlike a kubelet) never marks those pods Ready
  # again. Faults are injected on purpose (fault.sh), never by lease loss.
  # --kube-api-qps: its controllers (the node lifecycle one untaints each new
  # node once kwok marks it Ready) at 200 requests/s instead of 20, or 1,000
  # nodes (tools/bench/scale-nodes.py) stay unschedulable for minutes.
  ensure_daemon kube-controller-manager kube_cm_healthy 60 "$KUBE_CM_PORT" -- \
    "$STATE/bin/kube-controller-manager" \
    --node-monitor-grace-period=10m \
    --kube-api-qps=200 --kube-api-burst=400 \
    --bind-address="$HOST" --secure-port="$KUBE_CM_PORT" \
    --kubeconfig="$PKI/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --root-ca-file="$PKI/ca.crt" --service-account-private-key-file="$PKI/sa.key" \
    --service-cluster-ip-range="$KUBE_SERVICE_CIDR" \
    --leader-elect=false --profiling=false
  ensure_daemon kube-scheduler kube_scheduler_healthy 60 "$KUBE_SCHED_PORT" -- \
    "$STATE/bin/kube-scheduler" \
    --bind-address="$HOST" --secure-port="$KUBE_SCHED_PORT" \
    --kubeconfig="$PKI/scheduler.kubeconfig" \
    --authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
    --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
    --leader-elect=false --profiling=false
}

# Scheduler and controller-manager first, then the apiserver, all before etcd
# (rehearsal.sh stops services in reverse order): without etcd the apiserver
# ignores SIGTERM for ~25 s and stop_pid has to SIGKILL it.
svc_kube_down() {
  stop_service kube-scheduler
  stop_port_leftover kube-scheduler "$KUBE_SCHED_PORT" "$PKI/scheduler.kubeconfig"
  stop_service kube-controller-manager
  stop_port_leftover kube-controller-manager "$KUBE_CM_PORT" "$PKI/controller-manager.kubeconfig"
  stop_service kube-apiserver
  stop_port_leftover kube-apiserver "$KUBE_API_PORT" "$PKI/apiserver.crt"
}

svc_kube_status() {
  pid_alive kube-apiserver && kube_apiserver_healthy &&
    pid_alive kube-controller-manager && kube_cm_healthy &&
    pid_alive kube-scheduler && kube_scheduler_healthy
}

svc_kube_env() {
  cat <<ENV
export KUBECONFIG="$STATE/kubeconfig"
export TRAINIUM_KUBE_APISERVER="https://$HOST:$KUBE_API_PORT"
export TRAINIUM_KUBE_CA_FILE="$PKI/ca.crt"
ENV
}

svc_kube_ports() { echo "$KUBE_API_PORT $KUBE_CM_PORT $KUBE_SCHED_PORT"; }
