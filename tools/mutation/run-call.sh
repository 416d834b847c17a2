#!/bin/bash
# usage: tools/mutation/run-call.sh <tag> <mutate> [extra stryker args]
# The call loop's widened test subset (NOTES-mutcall.md); one runner (machine shared).
cd "$(dirname "$0")/../.."
tag=$1; mutate=$2; shift 2
SUBSET="test/call.edges.test.ts,test/core.edges.test.ts,test/cancellation.test.ts,test/timeouts.test.ts,test/pool.retry.test.ts,test/auth.test.ts,test/review/auth.test.ts,test/review/hangs.test.ts,test/hostile.test.ts,test/events.test.ts,test/messages.test.ts,test/options.test.ts,test/unknown-options.test.ts,test/execute-as.test.ts,test/blame.test.ts,test/shared-quota.test.ts,test/hedge-latency.test.ts,test/shared-park.test.ts,test/probe.test.ts,test/panic.test.ts,test/pool.breaker.test.ts,test/review/pins.test.ts,test/regressions.test.ts,test/pool.quota.test.ts,test/pool.selection.test.ts,test/keys-limits.test.ts,test/mutants/call-*.test.ts"
mkdir -p reports/logs reports/mutation
start=$(date +%s)
node tools/mutation/node_modules/@stryker-mutator/core/bin/stryker.js run tools/mutation/stryker.shared.config.mjs \
  --mutate "$mutate" --concurrency 1 --timeoutMS 5000 --ignoreStatic --incrementalFile reports/inc-mutcall.json \
  --testFiles "$SUBSET" --reporters clear-text,json,progress-append-only "$@" > reports/logs/$tag.log 2>&1
rc=$?
cp reports/mutation/mutation.json reports/mutation/$tag.json 2>/dev/null
echo "tag=$tag rc=$rc seconds=$(( $(date +%s) - start ))" | tee -a reports/logs/$tag.log
