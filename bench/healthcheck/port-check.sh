#!/bin/bash
# The same idea as `healthcheck listen PROCESS PORT` in bash over /proc, without lsof or ss:
# the socket inodes held by processes named PROCESS, then a LISTEN row (TCP, IPv4 or IPv6) with
# that local port and one of those inodes. Usage: port-check.sh PROCESS PORT
set -euo pipefail
name=$1 port=$2
hex=$(printf '%04X' "$port")
inodes=" "
for d in /proc/[0-9]*; do
  comm=
  read -r comm 2>/dev/null <"$d/comm" || continue
  [[ $comm == "${name:0:15}" ]] || continue  # the kernel keeps 15 bytes of the name
  for fd in "$d"/fd/*; do
    link=$(readlink "$fd" 2>/dev/null) || continue
    [[ $link == socket:\[*\] ]] && inodes+="${link:8:-1} "
  done
done
[[ $inodes != " " ]] || { echo "unhealthy: no process $name"; exit 1; }
while read -r _ local _ st _ _ _ _ _ inode _; do
  [[ $st == 0A && ${local##*:} == "$hex" && $inodes == *" $inode "* ]] && { echo "healthy: $name listens on $port"; exit 0; }
done < <(cat /proc/net/tcp /proc/net/tcp6)
echo "unhealthy: $name does not listen on $port"
exit 1
