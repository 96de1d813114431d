#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json) against `stepwise serve --http`, run with Node 22 (the npm
# package `node`, pinned too: the suite needs Node >= 22).
#
#   bash e2e/conformance/run.sh /path/to/stepwise
#
# Every server scenario of the suite is named below: either included (it
# must pass: no failed check and no warning) or excluded with its reason.
# A scenario the suite has and this file does not name fails the run, so a
# newer suite cannot skip scenarios silently. SCENARIOS.md has the table.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: bash e2e/conformance/run.sh STEPWISE_BINARY" >&2
  exit 2
fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$bin" ] || { echo "run.sh: $1 is not an executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)

# Scenarios that must pass.
include=(
  server-initialize           # initialize handshake
  logging-set-level           # logging/setLevel answers {}
  ping                        # ping answers {}
  completion-complete         # completion/complete on a prompt stepwise lacks: a result with an empty values array
  tools-list                  # every tool has name, description, inputSchema
  resources-list              # resources/list
  resources-subscribe         # resources/subscribe (stepwise accepts any URI: run resources appear later)
  resources-unsubscribe       # resources/unsubscribe
  prompts-list                # prompts/list
  server-sse-multiple-streams # three concurrent POSTs in one session, each its own SSE stream
  dns-rebinding-protection    # foreign Host/Origin refused with 4xx, loopback ones accepted
)

# Scenarios that cannot pass against a real product: each one calls a tool,
# reads a resource or gets a prompt that only the suite's own reference
# server ("everything server") defines, and checks its fixed answer.
declare -A exclude=(
  [tools-call-simple-text]="fixture tool test_simple_text"
  [tools-call-image]="fixture tool test_image_content"
  [tools-call-audio]="fixture tool test_audio_content"
  [tools-call-embedded-resource]="fixture tool test_embedded_resource"
  [tools-call-mixed-content]="fixture tool test_multiple_content_types"
  [tools-call-with-logging]="fixture tool test_tool_with_logging"
  [tools-call-error]="fixture tool test_error_handling"
  [tools-call-with-progress]="fixture tool test_tool_with_progress"
  [tools-call-sampling]="fixture tool test_sampling"
  [tools-call-elicitation]="fixture tool test_elicitation"
  [elicitation-sep1034-defaults]="fixture tool test_elicitation_sep1034_defaults"
  [elicitation-sep1330-enums]="fixture tool test_elicitation_sep1330_enums"
  [json-schema-2020-12]="fixture tool json_schema_2020_12_tool (pending in the suite)"
  [server-sse-polling]="fixture tool test_reconnection, which must close its stream mid-call (pending in the suite; it only warns)"
  [resources-read-text]="fixture resource test://static-text"
  [resources-read-binary]="fixture resource test://static-binary"
  [resources-templates-read]="fixture resource template test://template/{id}/data"
  [prompts-get-simple]="fixture prompt test_simple_prompt"
  [prompts-get-with-args]="fixture prompt test_prompt_with_arguments"
  [prompts-get-embedded-resource]="fixture prompt test_prompt_with_embedded_resource"
  [prompts-get-with-image]="fixture prompt test_prompt_with_image"
)

echo "-- npm ci (conformance suite, Node 22)"
npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
node22="$here/node_modules/.bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$node22" --version

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The suite's own list must be exactly include + exclude.
"$node22" "$suite" list --server | sed -n 's/^ *- \([^ ]*\).*/\1/p' | sort >"$work/listed"
{ printf '%s\n' "${include[@]}"; printf '%s\n' "${!exclude[@]}"; } | sort >"$work/named"
if ! diff -u "$work/named" "$work/listed" >"$work/list.diff"; then
  echo "FAIL the suite's server scenarios differ from run.sh's include/exclude lists (- named here, + listed by the suite):"
  cat "$work/list.diff"
  exit 1
fi
echo "-- $(wc -l <"$work/listed") server scenarios: ${#include[@]} included, ${#exclude[@]} excluded"

echo "-- starting $bin serve --http 127.0.0.1:0"
mkdir "$work/home"
"$bin" --home "$work/home" serve --http 127.0.0.1:0 </dev/null >"$work/serve.out" 2>"$work/serve.log" &
server=$!
url=""
for _ in $(seq 150); do
  url=$(sed -n 's/^stepwise: serving MCP at \(http:\/\/127\.0\.0\.1:[0-9]*\/mcp\)$/\1/p' "$work/serve.log")
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "FAIL stepwise serve --http did not print its URL:"; cat "$work/serve.log"
  exit 1
fi
echo "-- suite against $url"

passed=0
failed=0
broken=0 # the server misbehaved besides the scenarios
start=$SECONDS
for s in "${include[@]}"; do
  out="$work/results/$s"
  mkdir -p "$out"
  rc=0
  timeout 120 "$node22" "$suite" server --url "$url" --scenario "$s" -o "$out" >"$out/log" 2>&1 || rc=$?
  # Count the checks the suite saved: SUCCESS, FAILURE, WARNING (INFO is not a check).
  counts=$(find "$out" -name checks.json -exec "$node22" -e '
    const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const n = (s) => checks.filter((c) => c.status === s).length;
    console.log(n("SUCCESS"), n("FAILURE"), n("WARNING"));' {} \;)
  read -r ok bad warn <<<"${counts:-0 0 0}"
  if [ "$rc" -eq 0 ] && [ "$ok" -gt 0 ] && [ "$bad" -eq 0 ] && [ "$warn" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok   $s ($ok checks)"
  else
    failed=$((failed + 1))
    echo "FAIL $s (exit $rc; $ok passed, $bad failed, $warn warnings)"
    tail -n 30 "$out/log" | sed 's/^/     /'
    find "$out" -name checks.json -exec "$node22" -e '
      for (const c of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")))
        if (c.status === "FAILURE" || c.status === "WARNING")
          console.log(`     ${c.status} ${c.id}: ${c.errorMessage ?? c.description}`);' {} \;
  fi
done
elapsed=$((SECONDS - start))

if ! kill -0 "$server" 2>/dev/null; then
  echo "FAIL stepwise serve exited during the suite:"; cat "$work/serve.log"
  broken=1
else
  kill -TERM "$server"
  rc=0
  wait "$server" || rc=$?
  server=""
  if [ "$rc" -ne 0 ]; then
    echo "FAIL stepwise serve exited $rc on SIGTERM (want 0):"; cat "$work/serve.log"
    broken=1
  fi
fi
if [ -s "$work/serve.out" ]; then
  echo "FAIL stepwise serve --http wrote to stdout:"; cat "$work/serve.out"
  broken=1
fi
if grep -q 'level=ERROR' "$work/serve.log"; then
  echo "FAIL stepwise serve logged errors during the suite:"; grep 'level=ERROR' "$work/serve.log"
  broken=1
fi

echo "-- suite took ${elapsed}s"
echo "conformance: $passed passed, $failed failed, ${#exclude[@]} skipped"
[ "$failed" -eq 0 ] && [ "$broken" -eq 0 ]
