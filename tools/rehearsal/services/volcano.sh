#!/usr/bin/env bash
# Volcano: vc-controller-manager (Jobs -> pods + PodGroups, queue states) and
# vc-scheduler (gang scheduling), built from volcano.sh/volcano v1.15.1 (wrapper
# module tools/rehearsal/go/volcano: volcano.sh/apis v1.14.0 plus one constant,
# since the proxy serves no v1.15.x of it), with the CRDs from the same module.
# No admission webhook: Jobs set queue, schedulerName, minAvailable and task
# names themselves. The controller creates a Job's pods at 500 requests/s
# (its default, 50, took 20 s for the 1,000 pods of tools/bench/scale-nodes.py).
# Both run with the admin kubeconfig (also as $KUBECONFIG,
# which a device-sharing plugin inside the scheduler looks for), leader
# election off.
# Needs services/kube.sh.
VOLCANO_VERSION=v1.15.1
# The API module under it (see tools/rehearsal/go/volcano/go.mod) and its
# go.sum-style checksum, checked before the overlay is written.
VOLCANO_APIS_VERSION=v1.14.0
VOLCANO_APIS_SUM="h1:Rf8wzGFmgzbyg85GO0CxapDDEk/VM3D7QbjbI/sH+OQ="
VOLCANO_SCHED_HEALTH_PORT="${TRAINIUM_VOLCANO_SCHED_HEALTH_PORT:-11251}"
VOLCANO_CM_HEALTH_PORT="${TRAINIUM_VOLCANO_CM_HEALTH_PORT:-11252}"

vc_scheduler_healthy() { http_ok "http://$HOST:$VOLCANO_SCHED_HEALTH_PORT/healthz"; }
vc_cm_healthy() { http_ok "http://$HOST:$VOLCANO_CM_HEALTH_PORT/healthz"; }

volcano_kubectl() { KUBECONFIG="$STATE/kubeconfig" "$STATE/bin/kubectl" "$@"; }

# Server-side apply, saying only what changed (unchanged objects stay untouched).
volcano_quiet_apply() {
  local out line
  out="$(volcano_kubectl apply --server-side --field-manager=rehearsal-volcano "$@")" || return 1
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == *serverside-applied ]] || say "$line"
  done <<<"$out"
}

# What the overlay is made of: the module version, its checksum and our file.
volcano_apis_stamp() {
  echo "$VOLCANO_APIS_VERSION $VOLCANO_APIS_SUM $(sha256sum <"$ROOT/tools/rehearsal/go/volcano/apis-overlay.go.in" | cut -d' ' -f1)"
}

# tools/rehearsal/go/volcano/apis-overlay: volcano.sh/apis at
# $VOLCANO_APIS_VERSION, verified against $VOLCANO_APIS_SUM, with
# apis-overlay.go.in added; rewritten only when one of them changed. Two stacks
# of one checkout starting at once: one writes (under a lock beside it), the
# other waits and finds it written.
volcano_apis_overlay() {
  local wrapper="$ROOT/tools/rehearsal/go/volcano" stamp lock rc=0
  stamp="$(volcano_apis_stamp)"
  [[ -f "$wrapper/apis-overlay/.rehearsal-stamp" && "$(<"$wrapper/apis-overlay/.rehearsal-stamp")" == "$stamp" ]] && return 0
  exec {lock}>"$wrapper/.apis-overlay.lock"
  flock "$lock"
  volcano_write_apis_overlay "$wrapper" "$stamp" || rc=$?
  exec {lock}>&-
  return "$rc"
}

# Under the lock; every step checked (callers run it in an || list, where set -e does not apply).
volcano_write_apis_overlay() {
  local wrapper="$1" stamp="$2" target="$1/apis-overlay" json dir sum tmp
  [[ -f "$target/.rehearsal-stamp" && "$(<"$target/.rehearsal-stamp")" == "$stamp" ]] && return 0
  # What an interrupted run left (mktemp's six characters; not the lock).
  rm -rf "$wrapper"/.apis-overlay.??????
  # Outside any module: go mod download checks the zip against the checksum database.
  json="$(cd / && GOFLAGS='' GOWORK=off "$GO" mod download -json "volcano.sh/apis@$VOLCANO_APIS_VERSION")" || {
    say "cannot download volcano.sh/apis@$VOLCANO_APIS_VERSION from the Go module proxy"
    return 1
  }
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' <<<"$json")"
  sum="$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",*$/\1/p' <<<"$json")"
  if [[ "$sum" != "$VOLCANO_APIS_SUM" || -z "$dir" || ! -d "$dir" ]]; then
    say "volcano.sh/apis@$VOLCANO_APIS_VERSION has checksum '$sum' (in '$dir'), expected $VOLCANO_APIS_SUM"
    return 1
  fi
  tmp="$(mktemp -d "$wrapper/.apis-overlay.XXXXXX")" || tmp=""
  if [[ -z "$tmp" || ! -d "$tmp" ]]; then
    say "cannot make a temporary directory in $wrapper"
    return 1
  fi
  # The stamp goes last: a copy that failed half-way is never taken for a finished one.
  if ! { cp -R "$dir/." "$tmp/" && chmod -R u+w "$tmp" &&
    cp "$wrapper/apis-overlay.go.in" "$tmp/pkg/apis/scheduling/v1beta1/zz_rehearsal_overlay.go" &&
    echo "$stamp" >"$tmp/.rehearsal-stamp"; }; then
    say "could not write the volcano.sh/apis overlay in $tmp"
    rm -rf "$tmp"
    return 1
  fi
  if ! { rm -rf "$target" && mv "$tmp" "$target"; }; then
    say "could not move the volcano.sh/apis overlay to $target"
    rm -rf "$tmp"
    return 1
  fi
  say "wrote the volcano.sh/apis $VOLCANO_APIS_VERSION overlay for Volcano $VOLCANO_VERSION"
}

# Where the Go module cache holds volcano.sh/volcano at the pinned version
# (checked against the wrapper's go.sum; downloaded if it is not there).
volcano_module_dir() {
  volcano_apis_overlay >&2 || return 1
  (cd "$ROOT/tools/rehearsal/go/volcano" && "$GO" mod download -json "volcano.sh/volcano@$VOLCANO_VERSION") |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p'
}

# The Volcano CRDs (server-side apply: unchanged CRDs stay untouched). The job
# queues are not made here: the trainium.eks.volcano role makes them
# (inventories/local adopts this Volcano), and tests make their own.
volcano_apply() {
  local dir crd
  dir="$(volcano_module_dir)"
  if [[ -z "$dir" || ! -d "$dir/config/crd/volcano/bases" ]]; then
    say "cannot find volcano.sh/volcano@$VOLCANO_VERSION in the Go module cache"
    return 1
  fi
  volcano_quiet_apply --force-conflicts -f "$dir/config/crd/volcano/bases" -f "$dir/config/crd/jobflow/bases"
  for crd in jobs.batch.volcano.sh podgroups.scheduling.volcano.sh queues.scheduling.volcano.sh \
    commands.bus.volcano.sh jobflows.flow.volcano.sh jobtemplates.flow.volcano.sh; do
    volcano_kubectl wait --for=condition=Established --timeout=60s "crd/$crd" >/dev/null
  done
  say "volcano CRDs applied"
}

svc_volcano_up() {
  local ldflags="-X volcano.sh/volcano/pkg/version.Version=$VOLCANO_VERSION"
  # The binaries' cache key names the overlay they were built with.
  local build
  build="$VOLCANO_VERSION-apis-$VOLCANO_APIS_VERSION-$(volcano_apis_stamp | sha256sum | cut -c1-12)"
  volcano_apis_overlay || return 1
  go_build_cached vc-scheduler "$build" "$ROOT/tools/rehearsal/go/volcano" \
    volcano.sh/volcano/cmd/scheduler "$ldflags"
  go_build_cached vc-controller-manager "$build" "$ROOT/tools/rehearsal/go/volcano" \
    volcano.sh/volcano/cmd/controller-manager "$ldflags"
  volcano_apply
  mkdir -p "$STATE/volcano"
  ensure_daemon vc-controller-manager vc_cm_healthy 60 "$VOLCANO_CM_HEALTH_PORT" -- \
    env KUBECONFIG="$STATE/kubeconfig" "$STATE/bin/vc-controller-manager" \
    --kubeconfig="$STATE/kubeconfig" \
    --leader-elect=false \
    --enable-healthz=true --healthz-address="$HOST:$VOLCANO_CM_HEALTH_PORT" \
    --kube-api-qps=500 --kube-api-burst=1000 \
    -v=2
  ensure_daemon vc-scheduler vc_scheduler_healthy 60 "$VOLCANO_SCHED_HEALTH_PORT" -- \
    env KUBECONFIG="$STATE/kubeconfig" "$STATE/bin/vc-scheduler" \
    --kubeconfig="$STATE/kubeconfig" \
    --scheduler-conf="$ROOT/tools/rehearsal/volcano/scheduler.conf" \
    --leader-elect=false \
    --enable-healthz=true --healthz-address="$HOST:$VOLCANO_SCHED_HEALTH_PORT" \
    --enable-metrics=false \
    --cache-dump-dir="$STATE/volcano" \
    -v=3
}

svc_volcano_down() {
  stop_service vc-scheduler
  stop_port_leftover vc-scheduler "$VOLCANO_SCHED_HEALTH_PORT" "tools/rehearsal/volcano/scheduler.conf"
  stop_service vc-controller-manager
  stop_port_leftover vc-controller-manager "$VOLCANO_CM_HEALTH_PORT" "vc-controller-manager"
}

svc_volcano_status() {
  pid_alive vc-controller-manager && vc_cm_healthy && pid_alive vc-scheduler && vc_scheduler_healthy
}

# Jobs name schedulerName volcano and their queue themselves. The release
# manifest of the same module version, for the volcano role's adopt mode
# (inventories/local/group_vars/all/volcano.yml); its sha256 ships with the role.
svc_volcano_env() {
  local dir
  dir="$(volcano_module_dir)"
  if [[ -n "$dir" && -f "$dir/installer/volcano-development.yaml" ]]; then
    echo "export TRAINIUM_VOLCANO_MANIFEST_URL=\"file://$dir/installer/volcano-development.yaml\""
  fi
}

svc_volcano_ports() { echo "$VOLCANO_SCHED_HEALTH_PORT $VOLCANO_CM_HEALTH_PORT"; }
