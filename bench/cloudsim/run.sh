#!/usr/bin/env bash
# Measures the OpenStack simulator at scale (issue 5 item 4) and prints the machine it ran on.
# Usage: bench/cloudsim/run.sh [flags of the driver, e.g. -clients 4 -duration 30s]
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "go: $(go version)"
echo "command: go run ./bench/cloudsim -projects 1000 -servers 50 -volumes 50 -routes 30 $*"
go run ./bench/cloudsim -projects 1000 -servers 50 -volumes 50 -routes 30 "$@"
echo
echo "server-side CPU per call (no network), 1000 projects:"
go test ./internal/cloudsim/ -run '^$' -bench 'BenchmarkListAtScale' -benchmem -benchtime 2000x
