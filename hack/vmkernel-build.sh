#!/usr/bin/env bash
# Fetches the kernel of the cgroup v2 guest (health/checks TestMemoryCgroupV2RealMount): Debian's cloud kernel
# (linux-image-cloud-amd64's current package, about 27 MB; the guest needs cgroup2 with the memory controller,
# a serial console and an initramfs, all built in) with apt-get download through the host's own package
# sources, into a cache directory keyed by the package's name and version, and reuses it when present.
# Prints the path of the kernel (vmlinuz) on stdout; progress on stderr.
# Concurrent runs wait for each other (flock).
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v apt-get >/dev/null || die "apt-get is not here: the guest kernel is Debian's"
PKG=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '$1=="Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')
[ -n "$PKG" ] || die "linux-image-cloud-amd64 names no kernel package (apt-get update?)"
VER=$(apt-cache policy "$PKG" | awk '$1=="Candidate:" {print $2}')
OUT=$VITALS_CACHE/vmkernel-$PKG-$VER
mkdir -p "$VITALS_CACHE"
exec 9>"$VITALS_CACHE/vmkernel-build.lock"
flock 9
if [ -f "$OUT/vmlinuz" ]; then
  log "reusing $PKG $VER in $OUT"
  echo "$OUT/vmlinuz"; exit 0
fi
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
# apt-get download writes to the current directory, as the _apt user when it may
chmod 0777 "$OUT.tmp"
(cd "$OUT.tmp" && step "download $PKG $VER" apt-get download -q "$PKG=$VER" >&2)
dpkg-deb --fsys-tarfile "$OUT.tmp"/*.deb | tar -x -C "$OUT.tmp" --wildcards './boot/vmlinuz-*'
mv "$OUT.tmp"/boot/vmlinuz-* "$OUT.tmp/vmlinuz"
rm -rf "$OUT.tmp"/*.deb "$OUT.tmp/boot"
chmod 0755 "$OUT.tmp"
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
log "kernel in $OUT"
echo "$OUT/vmlinuz"
