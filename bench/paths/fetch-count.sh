#!/usr/bin/env bash
# Instructions per request (user space, valgrind cachegrind) of loopback fetch clients, see
# fetch-count.mjs. Usage:
#   bench/paths/fetch-count.sh NODE CALLERS N1 N2 REPEATS CLIENT... [-- JSON-extra]
#   e.g. bench/paths/fetch-count.sh node 1 500 1500 2 bare pooled execute
# For each repeat, every client runs twice (N1 and N2 requests after the same warm-up), in
# turns; prints one JSON line per client and repeat: Ir per request = (Ir(N2) - Ir(N1)) / (N2 - N1),
# and its ratio to the same repeat's `bare` (the first client should be bare).
set -euo pipefail
NODE=$1; CALLERS=$2; N1=$3; N2=$4; REPEATS=$5; shift 5
CLIENTS=(); EXTRA=''
while [ $# -gt 0 ]; do if [ "$1" = "--" ]; then EXTRA=",$2"; shift 2; else CLIENTS+=("$1"); shift; fi; done
HERE=$(cd "$(dirname "$0")" && pwd)
ir() { # client n -> total instructions
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$NODE" --single-threaded \
    "$HERE/fetch-count.mjs" "{\"client\":\"$1\",\"n\":$2,\"callers\":$CALLERS$EXTRA}" 2>&1 \
    | awk '/I *refs:/ { gsub(",", "", $NF); print $NF }'
}
for r in $(seq 1 "$REPEATS"); do
  declare -A per=()
  for c in "${CLIENTS[@]}"; do
    a=$(ir "$c" "$N1"); b=$(ir "$c" "$N2")
    per[$c]=$(( (b - a) / (N2 - N1) ))
    bare=${per[bare]:-${per[$c]}}
    echo "{\"node\":\"$("$NODE" -v)\",\"callers\":$CALLERS,\"repeat\":$r,\"client\":\"$c\",\"n\":[$N1,$N2],\"ir\":[$a,$b],\"irPerReq\":${per[$c]},\"vsBare\":$(awk "BEGIN{printf \"%.4f\", ${per[$c]}/$bare}")}"
  done
  unset per
done
