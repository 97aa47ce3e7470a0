#!/usr/bin/env bash
# Helpers shared by rehearsal.sh and the service files in services/.
# Sourced, not run. Expects ROOT, STATE, LOGS, RUN, HOST to be set.

say() { printf '[rehearsal] %s\n' "$*"; }

pid_alive() {
  local pidfile="$RUN/$1.pid"
  [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# The pid of whatever listens on a loopback TCP port (empty when nothing does).
port_owner() {
  ss -Hltnp "sport = :$1" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1
}

port_busy() {
  [[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]]
}

# wait_for WHAT CHECK-FUNCTION TIMEOUT-SECONDS: poll, saying how long so far.
wait_for() {
  local what="$1" check="$2" timeout="$3" waited=0
  while ! "$check"; do
    if (( waited >= timeout )); then
      say "$what did not become healthy in ${timeout}s; see $LOGS"
      return 1
    fi
    if (( waited > 0 && waited % 5 == 0 )); then say "waiting for $what (${waited}s of at most ${timeout}s)"; fi
    sleep 1
    waited=$((waited + 1))
  done
}

stop_pid() {
  local name="$1" pid="$2"
  say "stopping $name (pid $pid)"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null || true
}

stop_service() {
  local name="$1" pidfile="$RUN/$1.pid"
  if pid_alive "$name"; then stop_pid "$name" "$(cat "$pidfile")"; fi
  rm -f "$pidfile"
}

# ensure_daemon NAME HEALTH-FUNCTION TIMEOUT PORT -- COMMAND...
# Leaves a healthy daemon alone, restarts one that is running but unhealthy,
# starts a missing one, and refuses to start over a port someone else holds.
ensure_daemon() {
  local name="$1" health="$2" timeout="$3" port="$4"
  shift 5
  if pid_alive "$name" && "$health"; then
    say "$name already healthy (pid $(cat "$RUN/$name.pid"))"
    return 0
  fi
  if pid_alive "$name"; then
    say "$name (pid $(cat "$RUN/$name.pid")) is not healthy; restarting it"
  fi
  stop_service "$name"
  if [[ -n "$port" ]] && port_busy "$port"; then
    say "port $HOST:$port, which $name needs, is taken by pid $(port_owner "$port")"
    return 1
  fi
  say "starting $name"
  nohup "$@" >"$LOGS/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
  wait_for "$name" "$health" "$timeout"
  say "$name healthy (pid $(cat "$RUN/$name.pid"))"
}

# After stop_service: stop a leftover of ours that lost its pid file but still
# holds its port (matched by a fragment of its command line).
stop_port_leftover() {
  local name="$1" port="$2" pattern="$3" owner
  owner="$(port_owner "$port")"
  if [[ -n "$owner" ]] && tr '\0' ' ' <"/proc/$owner/cmdline" 2>/dev/null | grep -q -- "$pattern"; then
    stop_pid "$name without pid file" "$owner"
  fi
}

http_ok() {
  curl -fsS -o /dev/null --max-time 5 "$@" 2>/dev/null
}

# Binaries built from Go modules are cached by name and version outside the
# work tree; a cold build happens once per machine, then `up` takes seconds.
CACHE="${TRAINIUM_REHEARSAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainium-eks/rehearsal}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

# go_build_cached NAME VERSION MODULE-DIR PACKAGE [EXTRA-LDFLAGS]
# Builds PACKAGE inside the wrapper module MODULE-DIR (a go.mod + go.sum
# committed under tools/rehearsal/go/, so every dependency is pinned by
# checksum) into $CACHE/bin/NAME-VERSION, unless it is there already, and
# links it as $STATE/bin/NAME. Says every 30 s that the build goes on.
go_build_cached() {
  local name="$1" version="$2" moddir="$3" pkg="$4" ldflags="${5:-}"
  local out="$CACHE/bin/$name-$version"
  mkdir -p "$CACHE/bin" "$STATE/bin"
  if [[ ! -x "$out" ]]; then
    local started ticker rc=0
    started=$(date +%s)
    say "building $name $version from $pkg (once per machine; cached in $CACHE/bin)"
    ( while sleep 30; do say "still building $name: $(( $(date +%s) - started ))s so far"; done ) &
    ticker=$!
    ( cd "$moddir" && CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" \
        "$GO" build -ldflags "-s -w $ldflags" -o "$out.partial.$$" "$pkg" ) >"$LOGS/build-$name.log" 2>&1 || rc=$?
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    if (( rc != 0 )); then
      say "building $name failed; last lines of $LOGS/build-$name.log:"
      tail -n 20 "$LOGS/build-$name.log" >&2
      rm -f "$out.partial.$$"
      return 1
    fi
    # A partial file of this shell's own: two checkouts building at once each
    # finish their own file, and the rename is atomic.
    mv "$out.partial.$$" "$out"
    say "built $name in $(( $(date +%s) - started ))s"
  fi
  ln -sfn "$out" "$STATE/bin/$name"
}
