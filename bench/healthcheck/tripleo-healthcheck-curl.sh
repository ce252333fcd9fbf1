#!/bin/bash
# The contender modelled on TripleO's healthcheck_curl (common.sh): bash with `set -euo pipefail`
# running curl with the flags TripleO passes. Usage: tripleo-healthcheck-curl.sh URL
set -euo pipefail
curl -g -k -q -s -S --fail -o /dev/null \
  --max-time "${HEALTHCHECK_CURL_MAX_TIME:-10}" \
  --user-agent "curl-healthcheck" \
  --write-out '\n%{http_code} %{remote_ip}:%{remote_port} %{time_total} seconds' \
  "$1"
