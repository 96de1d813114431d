#!/usr/bin/env bash
# Scripted sessions from real MCP clients against a built stepwise binary,
# each over stdio and streamable HTTP:
#
#   ts        TypeScript SDK v1 (@modelcontextprotocol/sdk), protocol 2025-11-25
#   ts2       TypeScript SDK v2 (@modelcontextprotocol/client) pinned to 2026-07-28
#   inspector the MCP Inspector's CLI (Node 22), in its legacy and modern eras
#   tasks     the Tasks extension in raw JSON-RPC, with a server restart
#
# The go-sdk client's session is a Go test (cmd/stepwise, TestGoSDKClientSessions)
# and runs with `go test ./...`.
#
#   bash e2e/clients/run.sh STEPWISE_BINARY [SUITE...]
#
# Installs every client from its package-lock.json (npm ci), runs every suite
# (or the ones named) even when one fails, prints each one's wall time, and
# exits 1 naming the suites that failed.
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: bash e2e/clients/run.sh STEPWISE_BINARY [ts|ts2|inspector|tasks]..." >&2
  exit 2
fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$bin" ] || { echo "run.sh: $1 is not an executable" >&2; exit 2; }
shift
e2e=$(cd "$(dirname "$0")/.." && pwd)
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(ts ts2 inspector tasks)

start=$SECONDS
for dir in ts ts2 inspector; do
  case " ${suites[*]} " in *" $dir "*) ;; *) continue ;; esac
  echo "-- npm ci e2e/$dir"
  if ! npm ci --prefix "$e2e/$dir" --no-audit --no-fund --loglevel=error; then
    echo "FAIL npm ci e2e/$dir"
    exit 1
  fi
done
echo "-- installs took $((SECONDS - start))s"

failed=()
for suite in "${suites[@]}"; do
  t0=$SECONDS
  echo "== $suite"
  case "$suite" in
    ts) node "$e2e/ts/session.mjs" "$bin" ;;
    ts2) node "$e2e/ts2/session.mjs" "$bin" ;;
    inspector) "$e2e/inspector/node_modules/.bin/node" "$e2e/inspector/check.mjs" "$bin" ;;
    tasks) node "$e2e/tasks/session.mjs" "$bin" ;;
    *) echo "run.sh: unknown suite $suite" >&2; exit 2 ;;
  esac
  rc=$?
  if [ "$rc" -ne 0 ]; then
    failed+=("$suite")
    echo "-- $suite FAILED (exit $rc) in $((SECONDS - t0))s"
  else
    echo "-- $suite passed in $((SECONDS - t0))s"
  fi
done

echo "-- client sessions took $((SECONDS - start))s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAIL client sessions: ${failed[*]}"
  exit 1
fi
echo "ok   client sessions: ${suites[*]}"
