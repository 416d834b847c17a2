#!/bin/bash
# Several ab-viem.mjs processes, swapping which build loads first every other run (the first
# one loaded can come out a few percent apart): prints, per run, <before> and <after> over viem
# `fallback` and after/before; then the median of after/before.
#   bench/paths/ab-viem-runs.sh <before dist> <after dist> [runs=8] [ms=6000] [callers=1]
# NODE_BIN picks the node binary (default: node on PATH).
set -e
A=$(realpath "$1"); B=$(realpath "$2"); R=${3:-8}; MS=${4:-6000}; C=${5:-1}
NODE=${NODE_BIN:-node}
cd "$(dirname "$0")/.."
for i in $(seq 1 "$R"); do
  if [ $((i % 2)) = 1 ]; then first=$A; second=$B; else first=$B; second=$A; fi
  "$NODE" paths/ab-viem.mjs "$first" "$second" "$C" "$MS" | python3 -c "
import json, sys
c = json.load(sys.stdin)['cpuVsFallback']
before, after = (c['before'], c['after']) if '$first' == '$A' else (c['after'], c['before'])
print(before, after, round(after / before, 3))"
done | python3 -c "
import sys, statistics
r = []
for l in sys.stdin:
    print(l, end='', flush=True)
    r.append(float(l.split()[2]))
print('median after/before', round(statistics.median(r), 3), 'over', len(r), 'runs')"
