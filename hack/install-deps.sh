#!/usr/bin/env bash
# Installs what the tests need on a Debian bookworm machine (run as root): the OpenStack services (Zed, from
# Debian), MariaDB, RabbitMQ, Docker, small tools, and the Go tools the linters use.
# Idempotent: packages already installed are skipped; with nothing missing it takes about a second.
# Debian's OpenStack postinsts would configure databases, RabbitMQ and Keystone endpoints: debconf answers
# "no" to all of it (hack/openstack.sh configures everything itself), and a policy-rc.d keeps apt from
# starting any service (there is no init system here; services are started by the hack scripts).
# Env: VITALS_SKIP_GO_TOOLS=1 skips the Go tools.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PKGS=(
  # OpenStack (hack/openstack.sh)
  keystone neutron-server nova-api nova-conductor nova-scheduler placement-api glance-api
  cinder-api cinder-scheduler octavia-api octavia-worker
  mariadb-server rabbitmq-server uwsgi-plugin-python3 python3-keystoneclient
  # oslo.middleware's healthcheck: health's /healthcheck is differential-tested against it
  python3-oslo.middleware
  # container engine (hack/docker.sh)
  docker.io
  # the second container engine (test/e2e TestHealthcheckUnderPodman; runs with runc, no systemd)
  podman
  # the test nodes' runtime (hack/node.sh): containerd 1.6 (CRI) with runc, the CNI plugins (bridge,
  # host-local, portmap) and iptables (kube-proxy)
  containerd runc containernetworking-plugins iptables
  # tools for scripts, tests and benchmarks
  bc curl openssl wrk hyperfine iproute2 libcap2-bin
  # the cgroup v2 guest of health/checks (TestMemoryCgroupV2RealMount; its kernel: hack/vmkernel-build.sh)
  qemu-system-x86
  # the CA bundle the release image carries (make ca-bundle, deploy/Dockerfile, make release)
  ca-certificates
  # pushes the release's OCI archives to a registry (docs/getting-started.md, run by its test)
  skopeo
  # renders the pictures of docs/ (hack/render-docs.sh; a test checks the committed SVG is current)
  graphviz
)

missing() {
  local p st
  for p in "${PKGS[@]}"; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$st" = "install ok installed" ] || echo "$p"
  done
}

preseed() {
  local pkg t q
  for p in keystone:keystone neutron-common:neutron nova-common:nova placement-common:placement \
           glance-common:glance cinder-common:cinder octavia-common:octavia; do
    pkg=${p%%:*} t=${p##*:}
    for q in configure_db configure_rabbit configure_ksat configure_nova configure_neutron configure_placement; do
      echo "$pkg $t/$q boolean false"
    done
    echo "$pkg $pkg/dbconfig-install boolean false"
  done
  cat <<'PRESEED'
keystone keystone/create-admin-tenant boolean false
keystone keystone/register-endpoint boolean false
neutron-api neutron/configure_api-endpoint boolean false
nova-api nova/configure_api-endpoint boolean false
nova-api novaapi/configure_db boolean false
placement-api placement/configure_api-endpoint boolean false
glance-api glance/configure_api-endpoint boolean false
cinder-api cinder/configure_api-endpoint boolean false
octavia-api octavia/configure_api-endpoint boolean false
PRESEED
}

install_pkgs() {
  local miss=("$@") lg
  [ "$(id -u)" = 0 ] || die "run as root to install: ${miss[*]}"
  mkdir -p "$VITALS_CACHE"; lg=$VITALS_CACHE/apt.log
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# installed by vitals hack/install-deps.sh: apt must not start services\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
  fi
  preseed | debconf-set-selections
  export DEBIAN_FRONTEND=noninteractive
  step "apt-get update" apt-get -o DPkg::Lock::Timeout=900 update -qq
  log "installing ${#miss[@]} packages (+dependencies): ${miss[*]} (log: $lg)"
  if ! apt-get -o DPkg::Lock::Timeout=900 install -y --no-install-recommends "${miss[@]}" > "$lg" 2>&1; then
    tail -30 "$lg" >&2; return 1
  fi
}

go_tools() {
  # Download and build the pinned linters once, so that hack/lint.sh only runs them.
  (cd "$ROOT" && go run honnef.co/go/tools/cmd/staticcheck@v0.7.0 -version >/dev/null)
}

mapfile -t MISS < <(missing)
if [ ${#MISS[@]} -eq 0 ]; then
  log "Debian packages: all ${#PKGS[@]} present"
else
  step "install Debian packages" install_pkgs "${MISS[@]}"
fi
[ "${VITALS_SKIP_GO_TOOLS:-}" = 1 ] || step "Go tools (staticcheck v0.7.0)" go_tools
