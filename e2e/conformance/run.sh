#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json) against `stepwise serve --http`, run with Node 22 (the npm
# package `node`, pinned too: the suite needs Node >= 22).
#
#   bash e2e/conformance/run.sh /path/to/stepwise
#
# Every server scenario of the suite, at each protocol revision it applies
# to, is named below: either included (it must pass: no failed check and no
# warning) or excluded with its reason. A run the suite has and this file
# does not name fails the run, so a newer suite cannot skip scenarios
# silently. SCENARIOS.md has the table. The suite tests servers over HTTP
# only (`server --url`): it has no stdio mode for servers.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: bash e2e/conformance/run.sh STEPWISE_BINARY" >&2
  exit 2
fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$bin" ] || { echo "run.sh: $1 is not an executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)

# A run is SCENARIO@PROTOCOL: the suite runs a scenario at each protocol
# revision it applies to (`list --server` shows them), and the wire differs
# between them — 2025-11-25 is stateful (initialize, sessions), 2026-07-28
# stateless (per-request _meta) — so a scenario of both runs twice.
# Extension scenarios run as SCENARIO@extension. The server is stepwise with
# the suite's fixtures (--conformance-fixtures, see mcpserver/fixture.go):
# the tools, resources and prompts the scenarios call by name.
#
# Runs that must pass: no failed check and no warning.
include=(
  # protocol 2025-11-25 (stateful)
  server-initialize@2025-11-25            # initialize handshake
  server-session-lifecycle@2025-11-25     # Mcp-Session-Id issued, honoured, ended by DELETE
  logging-set-level@2025-11-25            # logging/setLevel answers {}
  ping@2025-11-25                         # ping answers {}
  completion-complete@2025-11-25          # completion/complete: a result with a values array
  tools-list@2025-11-25                   # every tool: name (SEP-986 format), description, inputSchema
  tools-call-simple-text@2025-11-25       # fixture test_simple_text
  tools-call-image@2025-11-25             # fixture test_image_content
  tools-call-audio@2025-11-25             # fixture test_audio_content
  tools-call-embedded-resource@2025-11-25 # fixture test_embedded_resource
  tools-call-mixed-content@2025-11-25     # fixture test_multiple_content_types
  tools-call-with-logging@2025-11-25      # fixture test_tool_with_logging: 3 log notifications during the call
  tools-call-error@2025-11-25             # fixture test_error_handling: isError result
  tools-call-with-progress@2025-11-25     # fixture test_tool_with_progress: 3 progress notifications
  tools-call-sampling@2025-11-25          # fixture test_sampling: sampling/createMessage to the client
  tools-call-elicitation@2025-11-25       # fixture test_elicitation: elicitation/create to the client
  json-schema-2020-12@2025-11-25          # fixture json_schema_2020_12_tool: $schema, $defs, … kept in tools/list
  elicitation-sep1034-defaults@2025-11-25 # fixture test_elicitation_sep1034_defaults
  server-sse-polling@2025-11-25           # fixture test_reconnection: priming event, retry, resumption with Last-Event-ID
  server-sse-multiple-streams@2025-11-25  # three concurrent POST SSE streams in one session
  elicitation-sep1330-enums@2025-11-25    # fixture test_elicitation_sep1330_enums
  resources-list@2025-11-25               # resources/list
  resources-read-text@2025-11-25          # fixture test://static-text
  resources-read-binary@2025-11-25        # fixture test://static-binary
  resources-templates-read@2025-11-25     # fixture template test://template/{id}/data
  resources-subscribe@2025-11-25          # resources/subscribe
  resources-unsubscribe@2025-11-25        # resources/unsubscribe
  prompts-list@2025-11-25                 # prompts/list
  prompts-get-simple@2025-11-25           # fixture test_simple_prompt
  prompts-get-with-args@2025-11-25        # fixture test_prompt_with_arguments
  prompts-get-embedded-resource@2025-11-25 # fixture test_prompt_with_embedded_resource
  prompts-get-with-image@2025-11-25       # fixture test_prompt_with_image
  dns-rebinding-protection@2025-11-25     # foreign Host/Origin refused with 4xx, loopback ones accepted
  # protocol 2026-07-28 (stateless)
  server-stateless@2026-07-28             # SEP-2575: server/discover, per-request _meta, no sessions, -32021, subscriptions/listen
  completion-complete@2026-07-28
  tools-list@2026-07-28
  tools-call-simple-text@2026-07-28
  tools-call-image@2026-07-28
  tools-call-audio@2026-07-28
  tools-call-embedded-resource@2026-07-28
  tools-call-mixed-content@2026-07-28
  tools-call-error@2026-07-28
  tools-call-with-progress@2026-07-28
  json-schema-2020-12@2026-07-28          # SEP-2106 keywords too (allOf/anyOf, if/then/else, $anchor)
  server-sse-multiple-streams@2026-07-28
  resources-list@2026-07-28
  resources-read-text@2026-07-28
  resources-read-binary@2026-07-28
  resources-templates-read@2026-07-28
  sep-2164-resource-not-found@2026-07-28  # resources/read of an unknown URI: -32602
  prompts-list@2026-07-28
  prompts-get-simple@2026-07-28
  prompts-get-with-args@2026-07-28
  prompts-get-embedded-resource@2026-07-28
  prompts-get-with-image@2026-07-28
  dns-rebinding-protection@2026-07-28
  caching@2026-07-28                      # SEP-2549: ttlMs and cacheScope on list results and reads
  http-header-validation@2026-07-28       # SEP-2243: Mcp-Method / Mcp-Name headers checked against the body
  http-custom-header-server-validation@2026-07-28 # SEP-2243: fixture test_x_mcp_header's Mcp-Param-Region
  input-required-result-basic-elicitation@2026-07-28       # SEP-2322 (multi round-trip), fixture tools test_input_required_result_*
  input-required-result-basic-sampling@2026-07-28
  input-required-result-basic-list-roots@2026-07-28
  input-required-result-request-state@2026-07-28
  input-required-result-multiple-input-requests@2026-07-28
  input-required-result-multi-round@2026-07-28
  input-required-result-missing-input-response@2026-07-28
  input-required-result-non-tool-request@2026-07-28        # fixture prompt test_input_required_result_prompt
  input-required-result-result-type@2026-07-28
  input-required-result-unsupported-methods@2026-07-28
  input-required-result-tampered-state@2026-07-28          # a requestState altered by the client: -32602
  input-required-result-capability-check@2026-07-28
  input-required-result-ignore-extra-params@2026-07-28
  input-required-result-validate-input@2026-07-28
  # Tasks extension (SEP-2663), fixture tools of mcpserver/fixture.go served as tasks
  tasks-lifecycle@extension               # slow_compute, failing_job, protocol_error_job: working, completed (isError too), failed, cancelled
  tasks-capability-negotiation@extension  # advertised; -32021 without the extension; per-request opt-in
  tasks-wire-fields@extension             # ttlMs, pollIntervalMs; no legacy keys
  tasks-request-state-removal@extension   # no requestState on tasks
  tasks-mrtr-input@extension              # confirm_delete, multi_input: input_required, tasks/update, partial answers
  tasks-request-headers@extension         # Mcp-Name is the task id on tasks/*: a mismatch is -32020
  tasks-dispatch-and-envelope@extension   # tasks/result and tasks/list removed, resultType, durable create, unknown id -32602
  tasks-required-task-error@extension     # a task-required tool called without the extension: -32021 naming it
  tasks-mrtr-composition@extension        # test_tool_with_task: an input_required round, then a task
)

# Runs that are not made, each with its reason.
skills_reason="Skills extension (SEP-2640), which stepwise does not offer: against a server that does not declare it every check is SKIPPED, so a run would pass without testing anything"
declare -A exclude=(
  [tasks-status-notifications@extension]="Tasks extension: the suite itself skips it (\"pending subscriptions/listen rewrite\"), so it has no check to pass"
  [sep-2640-skills-directory@extension]=$skills_reason
  [sep-2640-skills-enumeration@extension]=$skills_reason
  [sep-2640-skills-manifest@extension]=$skills_reason
)

# Error lines the SDK logs (ProtocolLogger) for what a scenario sends on
# purpose, not for a fault of the server: server-stateless sends the methods
# 2026-07-28 removed (initialize, ping, logging/setLevel, resources/subscribe,
# …) and checks that they are refused, which the go-sdk logs at ERROR.
expected_errors='msg="method removed in the new protocol"'

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

# The suite's own runs must be exactly include + exclude: a scenario at each
# of the two protocols it applies to, extensions once.
"$node22" "$suite" list --server | sed -n 's/^ *- \([^ ]*\) \[\(.*\)\]$/\1 \2/p' | while read -r name tags; do
  ran=0
  for v in 2025-11-25 2026-07-28 extension; do
    case ",$tags," in *",$v,"*) echo "$name@$v"; ran=1 ;; esac
  done
  [ "$ran" -eq 1 ] || echo "$name@$tags" # applies to neither: named nowhere, so the diff shows it
done | sort >"$work/listed"
{ printf '%s\n' "${include[@]}"; printf '%s\n' "${!exclude[@]}"; } | sort >"$work/named"
if [ "$(uniq -d "$work/named")" != "" ]; then
  echo "FAIL run.sh names these runs twice:"; uniq -d "$work/named"
  exit 1
fi
if ! diff -u "$work/named" "$work/listed" >"$work/list.diff"; then
  echo "FAIL the suite's server runs differ from run.sh's include/exclude lists (- named here, + listed by the suite):"
  cat "$work/list.diff"
  exit 1
fi
echo "-- $(wc -l <"$work/listed") server runs: ${#include[@]} included, ${#exclude[@]} excluded"

echo "-- starting $bin serve --http 127.0.0.1:0 --conformance-fixtures"
mkdir "$work/home"
STEPWISE_TEST_FIXTURES=1 "$bin" --home "$work/home" serve --http 127.0.0.1:0 --conformance-fixtures </dev/null >"$work/serve.out" 2>"$work/serve.log" &
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

broken=0 # the server misbehaved besides the scenarios
start=$SECONDS
# One suite process per protocol runs every scenario of it (a process per
# scenario would spend most of the run starting Node); extension scenarios
# run one by one, each in its own process, all at once (the Tasks ones
# mostly wait for their tasks), beside the protocols' processes. The
# excluded runs of a protocol run too and are not read.
declare -A protocols=()
extensions=() # their processes' ids
for run in "${include[@]}"; do
  v=${run#*@}
  if [ "$v" = extension ]; then
    s=${run%@*}
    timeout 120 "$node22" "$suite" server --url "$url" --scenario "$s" -o "$work/results/extension" >"$work/suite-extension-$s.log" 2>&1 &
    extensions+=($!)
  else
    protocols[$v]=1
  fi
done
for v in "${!protocols[@]}"; do
  timeout 150 "$node22" "$suite" server --url "$url" --suite all --spec-version "$v" -o "$work/results/$v" >"$work/suite-$v.log" 2>&1 || true
done
for pid in "${extensions[@]}"; do
  wait "$pid" || true # their exit status is not read: checks.json is
done

# Each included run passes when the suite saved its checks, with at least
# one SUCCESS and no FAILURE or WARNING (INFO and SKIPPED are not verdicts).
report=$("$node22" -e '
  const fs = require("fs"), path = require("path");
  const [dir, ...runs] = process.argv.slice(1);
  for (const run of runs) {
    const at = run.lastIndexOf("@"), s = run.slice(0, at), v = run.slice(at + 1);
    const base = path.join(dir, v);
    // The suite saves server-<scenario>-<ISO time>/checks.json.
    const prefix = "server-" + s + "-";
    const ours = (d) => d.startsWith(prefix) && /^\d{4}-\d\d-\d\dT/.test(d.slice(prefix.length));
    const dirs = fs.existsSync(base) ? fs.readdirSync(base).filter(ours) : [];
    const checks = dirs.flatMap((d) => {
      const f = path.join(base, d, "checks.json");
      return fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, "utf8")) : [];
    });
    const n = (st) => checks.filter((c) => c.status === st).length;
    const ok = n("SUCCESS"), bad = n("FAILURE"), warn = n("WARNING");
    if (dirs.length === 1 && ok > 0 && bad === 0 && warn === 0) {
      console.log(`ok   ${run} (${ok} checks)`);
    } else {
      console.log(`FAIL ${run} (${dirs.length} result(s); ${ok} passed, ${bad} failed, ${warn} warnings)`);
      for (const c of checks)
        if (c.status === "FAILURE" || c.status === "WARNING")
          console.log(`     ${c.status} ${c.id}: ${c.errorMessage ?? c.description}`);
    }
  }' "$work/results" "${include[@]}")
echo "$report"
passed=$(grep -c '^ok ' <<<"$report" || true)
failed=$(grep -c '^FAIL ' <<<"$report" || true)
if [ "$failed" -gt 0 ]; then
  for log in "$work"/suite-*.log; do
    echo "-- tail of $(basename "$log")"; tail -n 40 "$log" | sed 's/^/     /'
  done
fi
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
if grep 'level=ERROR' "$work/serve.log" | grep -vF "$expected_errors" >"$work/errors"; then
  echo "FAIL stepwise serve logged errors during the suite:"; cat "$work/errors"
  broken=1
fi

echo "-- suite took ${elapsed}s"
echo "conformance: $passed passed, $failed failed, ${#exclude[@]} excluded"
[ "$failed" -eq 0 ] && [ "$broken" -eq 0 ]
