#!/usr/bin/env bash
# The ECR stand-in: a real OCI registry (Debian docker-registry, distribution
# 2.8) on loopback, with TLS from a rehearsal CA and htpasswd basic auth.
# Everything it needs is generated once under $STATE/registry and kept, so the
# password, CA and pushed images survive `down` / `up`:
#   password        the password of users trainium and AWS (mode 600)
#   htpasswd        bcrypt hashes of it, read by the registry (user AWS: ECR's
#                   login user; moto_ext_ecr.py answers GetAuthorizationToken
#                   with AWS:<password>)
#   http-secret     the registry's upload-state secret
#   ca/ca.crt       the rehearsal CA (ca.key next to it, mode 600)
#   tls/server.*    the server certificate for 127.0.0.1 and localhost
#   certs.d/ca.crt  a copy of the CA: the directory to give buildah --cert-dir
#   config.yml      the registry's configuration
#   data/           the registry's storage
# buildah's own storage goes under $STATE/buildah, apart from the user's.
# After the registry is healthy, the rehearsal's base image is built from
# Debian packages and pushed there (registry_base_image, skipped when the
# registry has it); env.sh names it TRAINIUM_REHEARSAL_BASE_IMAGE.
REGISTRY_PORT="${TRAINIUM_REGISTRY_PORT:-5050}"
REGISTRY_USER=trainium
# ECR's registry user is always AWS; it gets the same password.
REGISTRY_ECR_USER=AWS
# The Debian packages of the base image: busybox-static gives /bin/sh and the
# coreutils applets RUN steps use (sha256sum, chmod, ...); base-files the
# FHS skeleton and os-release; netbase /etc/services and /etc/protocols.
REGISTRY_BASE_PACKAGES="${TRAINIUM_REHEARSAL_BASE_PACKAGES:-busybox-static base-files netbase}"
REGISTRY_BASE_REPOSITORY=rehearsal/debian-base
# moto (started before the registry, from the same shell) reads these at
# request time to answer ECR's GetAuthorizationToken and repositoryUri.
export TRAINIUM_REHEARSAL_REGISTRY="$HOST:$REGISTRY_PORT"
export TRAINIUM_REHEARSAL_REGISTRY_PASSWORD_FILE="$STATE/registry/password"

registry_dir() { echo "$STATE/registry"; }

registry_password() { cat "$(registry_dir)/password"; }

# HTTP status of GET /v2/ (000 when nothing answers), with extra curl args.
registry_v2_code() {
  curl -sS -o /dev/null -w '%{http_code}' --max-time 5 \
    --cacert "$(registry_dir)/ca/ca.crt" "$@" "https://$HOST:$REGISTRY_PORT/v2/" 2>/dev/null || true
}

# Healthy means: the TLS certificate verifies against the rehearsal CA, the
# registry refuses anonymous clients (401) and lets trainium in (200).
registry_healthy() {
  [[ -f "$(registry_dir)/password" ]] || return 1
  [[ "$(registry_v2_code)" == 401 ]] || return 1
  [[ "$(registry_v2_code -u "$REGISTRY_USER:$(registry_password)")" == 200 ]]
}

registry_generate_tls() {
  local dir
  dir="$(registry_dir)"
  mkdir -p "$dir/ca" "$dir/tls" "$dir/certs.d"
  if [[ ! -s "$dir/ca/ca.crt" || ! -s "$dir/ca/ca.key" ]]; then
    say "registry: creating the rehearsal CA in $dir/ca"
    rm -f "$dir/tls/server.crt"
    ( umask 077
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$dir/ca/ca.key" -out "$dir/ca/ca.crt" -days 3650 \
        -subj "/CN=trainium.eks rehearsal CA" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" ) >"$LOGS/registry-tls.log" 2>&1
    chmod 644 "$dir/ca/ca.crt"
  fi
  if [[ ! -s "$dir/tls/server.crt" || ! -s "$dir/tls/server.key" ]] \
      || ! openssl verify -CAfile "$dir/ca/ca.crt" "$dir/tls/server.crt" >/dev/null 2>&1 \
      || ! openssl x509 -checkend 86400 -noout -in "$dir/tls/server.crt" >/dev/null 2>&1; then
    say "registry: issuing its server certificate for $HOST"
    ( umask 077
      openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$dir/tls/server.key" -out "$dir/tls/server.csr" -subj "/CN=$HOST"
      printf '%s\n' "subjectAltName=IP:$HOST,DNS:localhost" "extendedKeyUsage=serverAuth" \
        "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
        >"$dir/tls/server.ext"
      openssl x509 -req -in "$dir/tls/server.csr" -CA "$dir/ca/ca.crt" -CAkey "$dir/ca/ca.key" \
        -set_serial "0x$(openssl rand -hex 16)" -days 825 -sha256 \
        -extfile "$dir/tls/server.ext" -out "$dir/tls/server.crt" ) >>"$LOGS/registry-tls.log" 2>&1
    rm -f "$dir/tls/server.csr"
  fi
  # buildah --cert-dir reads every *.crt there as a CA (and *.cert/*.key as a
  # client pair), so the directory holds the CA certificate and nothing else.
  cp "$dir/ca/ca.crt" "$dir/certs.d/ca.crt"
}

registry_generate() {
  local dir
  dir="$(registry_dir)"
  mkdir -p "$dir/data" "$STATE/buildah"
  if [[ ! -s "$dir/password" ]]; then
    say "registry: generating the password of user $REGISTRY_USER ($dir/password)"
    ( umask 077; openssl rand -hex 24 >"$dir/password" )
    rm -f "$dir/htpasswd"
  fi
  chmod 600 "$dir/password"
  if [[ ! -s "$dir/http-secret" ]]; then
    ( umask 077; openssl rand -hex 32 >"$dir/http-secret" )
  fi
  # The password goes through stdin (-i), never on a command line other users can read in ps.
  if [[ ! -s "$dir/htpasswd" ]] || ! registry_password | htpasswd -vi "$dir/htpasswd" "$REGISTRY_USER" >/dev/null 2>&1 \
      || ! registry_password | htpasswd -vi "$dir/htpasswd" "$REGISTRY_ECR_USER" >/dev/null 2>&1; then
    ( umask 077
      registry_password | htpasswd -Bin "$REGISTRY_USER" >"$dir/htpasswd.new"
      registry_password | htpasswd -Bin "$REGISTRY_ECR_USER" >>"$dir/htpasswd.new"
      mv -f "$dir/htpasswd.new" "$dir/htpasswd" )
  fi
  registry_generate_tls
  cat >"$dir/config.yml" <<YAML
# Generated by tools/rehearsal/services/registry.sh; rewritten on every up.
version: 0.1
log:
  level: info
  fields:
    service: trainium-rehearsal-registry
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $HOST:$REGISTRY_PORT
  secret: $(cat "$dir/http-secret")
  tls:
    certificate: $dir/tls/server.crt
    key: $dir/tls/server.key
  headers:
    X-Content-Type-Options: [nosniff]
auth:
  htpasswd:
    realm: trainium-rehearsal
    path: $dir/htpasswd
health:
  storagedriver:
    enabled: true
    interval: 10s
    threshold: 3
YAML
  chmod 600 "$dir/config.yml"
}

svc_registry_up() {
  registry_generate
  ensure_daemon registry registry_healthy 30 "$REGISTRY_PORT" -- \
    /usr/bin/docker-registry serve "$(registry_dir)/config.yml"
  registry_base_image
  # Stand-ins of the platform roles' images, which image_digest pins by digest
  # through the mirror the local inventory names (tools/rehearsal/platform_images.py).
  "$VENV/bin/python" "$ROOT/tools/rehearsal/platform_images.py" --registry "$HOST:$REGISTRY_PORT" \
    --password-file "$(registry_dir)/password" --ca-file "$(registry_dir)/ca/ca.crt" \
    || { say "registry: pushing the platform image stand-ins failed"; return 1; }
}

# "package=version" of every base package's candidate version: one apt-cache
# call, remembered in $STATE/registry/base-versions until apt's lists change.
registry_base_versions() {
  local memo
  memo="$(registry_dir)/base-versions"
  if [[ -s "$memo" && "$memo" -nt /var/lib/apt/lists && "$(head -n 1 "$memo")" == "# $REGISTRY_BASE_PACKAGES" ]]; then
    tail -n +2 "$memo"
    return 0
  fi
  local versions pkg
  # shellcheck disable=SC2086
  versions="$(apt-cache policy $REGISTRY_BASE_PACKAGES 2>/dev/null | awk '/^[^ ]/{p=$1; sub(":$","",p)} /Candidate:/{print p"="$2}')"
  for pkg in $REGISTRY_BASE_PACKAGES; do
    if ! grep -q "^$pkg=[^(]" <<<"$versions"; then
      say "registry: Debian package $pkg has no candidate version (apt-get update?)" >&2
      return 1
    fi
  done
  mkdir -p "$(registry_dir)"
  printf '# %s\n%s\n' "$REGISTRY_BASE_PACKAGES" "$versions" >"$memo"
  echo "$versions"
}

# The Neuron SDK of the Deep Learning Container the base image stands in for
# (inventories/aws: pytorch-training-neuronx:...-sdk2.29.1-...). Its tag says
# so, as a DLC's does, and the validation checks it against the nodes' AMI.
REGISTRY_BASE_STANDS_FOR_SDK=2.29.1

# The base image's tag: busybox's version ("1:1.35.0-4+deb12u1+b1" ->
# "1.35.0-4-deb12u1-b1") plus 10 hex of a sha256 over every "package=version"
# line, so an update of any package gives a new tag, then the SDK it stands for.
registry_base_tag() {
  local versions busybox
  versions="$(registry_base_versions)" || return 1
  busybox="$(sed -n 's/^busybox-static=\(.*:\)\{0,1\}//p' <<<"$versions")"
  busybox="$(printf '%s' "${busybox:-none}" | tr -c 'A-Za-z0-9._' '-')"
  echo "bookworm-busybox-$busybox-$(printf '%s\n' "$versions" | sha256sum | cut -c1-10)-standin-sdk$REGISTRY_BASE_STANDS_FOR_SDK"
}

registry_base_ref() { echo "$HOST:$REGISTRY_PORT/$REGISTRY_BASE_REPOSITORY:$(registry_base_tag)"; }

# Whether the registry has the manifest of REF's tag (HEAD, trainium's credentials).
registry_has_manifest() {
  local ref="$1" repo_tag code
  repo_tag="${ref#*/}"
  code="$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 -I \
    --cacert "$(registry_dir)/ca/ca.crt" -K <(printf 'user = "%s:%s"\n' "$REGISTRY_USER" "$(registry_password)") \
    -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
    "https://$HOST:$REGISTRY_PORT/v2/${repo_tag%%:*}/manifests/${repo_tag##*:}" 2>/dev/null || true)"
  [[ "$code" == 200 ]]
}

# buildah with the rehearsal's storage, an auth file of its own and no user login.
registry_buildah() {
  # shellcheck disable=SC2086
  env -u REGISTRY_AUTH_FILE -u DOCKER_CONFIG -u XDG_CONFIG_HOME -u CONTAINERS_STORAGE_CONF \
    HOME="$STATE/buildah/home" BUILDAH_ISOLATION=chroot \
    buildah --root "$STATE/buildah/root" --runroot "$STATE/buildah/runroot" --storage-driver vfs "$@"
}

# The rehearsal's base image, built from Debian packages and pushed to the
# registry: `apt-get download` into a cache (kept across stacks, by version),
# `dpkg-deb -x` into a root file system, busybox's applets linked into /bin,
# root and nobody in /etc/passwd, a tar of it as the one layer of a buildah
# `from scratch` container, committed with PATH and Cmd, pushed with the
# trainium credentials. Skipped when the registry has the tag already.
registry_base_image() {
  local started ref tag cache work pkg ctr applet authfile
  started=$(date +%s%N)
  ref="$(registry_base_ref)" || return 1
  if registry_has_manifest "$ref"; then
    say "registry: base image $ref present ($(( ($(date +%s%N) - started) / 1000000 )) ms)"
    return 0
  fi
  tag="${ref##*:}"
  say "registry: building the base image $ref from Debian packages ($REGISTRY_BASE_PACKAGES)"
  # shellcheck disable=SC2153  # CACHE: lib.sh's cache directory, kept across stacks
  cache="$CACHE/debs"
  work="$STATE/buildah/base-$tag"
  mkdir -p "$cache" "$STATE/buildah/home"
  rm -rf "$work"
  mkdir -p "$work/rootfs"
  local version deb
  for pkg in $REGISTRY_BASE_PACKAGES; do
    version="$(registry_base_versions | sed -n "s/^$pkg=//p")"
    # apt-get download names the file <package>_<version, ':' as %3a>_<arch>.deb
    deb="$(compgen -G "$cache/${pkg}_${version//:/%3a}_*.deb" | head -n 1 || true)"
    if [[ -z "$deb" ]]; then
      ( cd "$cache" && apt-get download -q "$pkg=$version" ) >>"$LOGS/registry-base.log" 2>&1 \
        || { say "registry: apt-get download $pkg=$version failed; see $LOGS/registry-base.log"; return 1; }
      deb="$(compgen -G "$cache/${pkg}_${version//:/%3a}_*.deb" | head -n 1)"
    fi
    dpkg-deb -x "$deb" "$work/rootfs"
  done
  mkdir -p "$work/rootfs/bin" "$work/rootfs/usr/bin" "$work/rootfs/sbin" "$work/rootfs/tmp" "$work/rootfs/root" \
    "$work/rootfs/etc" "$work/rootfs/proc" "$work/rootfs/sys" "$work/rootfs/dev"
  chmod 1777 "$work/rootfs/tmp"
  # The static busybox runs on the host too: it lists its own applets.
  for applet in $("$work/rootfs/bin/busybox" --list); do
    [[ -e "$work/rootfs/bin/$applet" ]] || ln -s busybox "$work/rootfs/bin/$applet"
  done
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$work/rootfs/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$work/rootfs/etc/group"
  tar -C "$work/rootfs" --numeric-owner --owner=0 --group=0 -cf "$work/rootfs.tar" .
  authfile="$work/auth.json"
  ( umask 077
    printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$HOST:$REGISTRY_PORT" \
      "$(printf '%s:%s' "$REGISTRY_USER" "$(registry_password)" | base64 -w0)" >"$authfile" )
  local rc=0
  if ! {
    ctr="$(registry_buildah from --authfile "$authfile" scratch)" &&
    registry_buildah add "$ctr" "$work/rootfs.tar" / &&
    registry_buildah config \
      --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --cmd /bin/sh --workingdir / \
      --label org.opencontainers.image.title="trainium.eks rehearsal base" \
      --label org.opencontainers.image.description="Debian $(echo "$REGISTRY_BASE_PACKAGES" | tr ' ' ','), built by tools/rehearsal/services/registry.sh" \
      "$ctr" &&
    registry_buildah commit --rm "$ctr" "localhost/$REGISTRY_BASE_REPOSITORY:$tag" &&
    registry_buildah push --authfile "$authfile" --cert-dir "$(registry_dir)/certs.d" \
      "localhost/$REGISTRY_BASE_REPOSITORY:$tag" "docker://$ref"
  } >>"$LOGS/registry-base.log" 2>&1; then
    rc=1
  fi
  rm -f "$authfile"
  rm -rf "$work"
  if (( rc != 0 )); then
    say "registry: building or pushing the base image failed; see $LOGS/registry-base.log"
    return 1
  fi
  say "registry: pushed the base image $ref in $(( ($(date +%s%N) - started) / 1000000 )) ms"
}

svc_registry_down() {
  stop_service registry
  stop_port_leftover registry "$REGISTRY_PORT" "$(registry_dir)/config.yml"
}

svc_registry_status() { pid_alive registry && registry_healthy; }

svc_registry_env() {
  local dir
  dir="$(registry_dir)"
  cat <<ENV
# The ECR stand-in (HTTPS, rehearsal CA, basic auth). No login is stored:
# pass the credentials (buildah --creds) where they are needed.
export TRAINIUM_REGISTRY="$HOST:$REGISTRY_PORT"
export TRAINIUM_REGISTRY_URL="https://$HOST:$REGISTRY_PORT"
export TRAINIUM_REGISTRY_USERNAME="$REGISTRY_USER"
export TRAINIUM_REGISTRY_PASSWORD="$(registry_password 2>/dev/null)"
export TRAINIUM_REGISTRY_CA_FILE="$dir/ca/ca.crt"
export TRAINIUM_REGISTRY_CERT_DIR="$dir/certs.d"
# Global buildah flags: storage of its own under $STATE/buildah, vfs driver.
export TRAINIUM_BUILDAH_OPTS="--root $STATE/buildah/root --runroot $STATE/buildah/runroot --storage-driver vfs"
export TRAINIUM_BUILDAH_ISOLATION=chroot
export BUILDAH_ISOLATION=chroot
# The base image the rehearsal builds from Debian packages (busybox /bin/sh, no python3).
export TRAINIUM_REHEARSAL_BASE_IMAGE="$(registry_base_ref 2>/dev/null)"
ENV
}

svc_registry_ports() { echo "$REGISTRY_PORT"; }
