#!/usr/bin/env bash
# Debian packages the suites and the rehearsal use; installs the missing ones
# (`make setup` runs this). curl and ss: health checks; git: the sanity copy;
# the shellcheck tool: its sanity test; openssl: the rehearsal's PKI;
# docker-registry + htpasswd: the OCI registry with basic auth; buildah: image
# builds without a daemon. Go (1.24 or newer) comes with the machine.
set -euo pipefail
declare -A package_of=(
  [curl]=curl [ss]=iproute2 [git]=git [shellcheck]=shellcheck [openssl]=openssl
  [docker-registry]=docker-registry [htpasswd]=apache2-utils [buildah]=buildah
)
missing=()
for command in "${!package_of[@]}"; do
  command -v "$command" >/dev/null || missing+=("${package_of[$command]}")
done
if ! command -v go >/dev/null && [[ ! -x /usr/local/go/bin/go ]]; then
  echo "system-deps: Go 1.24 or newer is needed for the rehearsal's Kubernetes parts" >&2
  exit 1
fi
(( ${#missing[@]} )) || exit 0
if (( EUID != 0 )); then
  echo "system-deps: missing Debian packages; run: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "system-deps: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
# Where systemd runs, the package starts a registry of its own on :5000
# (moto's port); the rehearsal runs its own registry.
systemctl disable --now docker-registry 2>/dev/null || true
