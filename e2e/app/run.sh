#!/usr/bin/env bash
# stepwise's MCP App (ui://stepwise/run) in Chromium, in a host harness on
# the host side of @modelcontextprotocol/ext-apps (see host.mjs):
#
#   bash e2e/app/run.sh STEPWISE_BINARY [ARTIFACT_DIR]
#
# Installs the harness from package-lock.json (npm ci: the ext-apps SDK, the
# TypeScript MCP SDK v2 client, esbuild, playwright-core), bundles the host
# page into a temporary directory at test time, and drives Debian's chromium
# headless ($CHROMIUM, default /usr/bin/chromium). Screenshots go to
# ARTIFACT_DIR (default: a temporary directory, printed at the end).
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: bash e2e/app/run.sh STEPWISE_BINARY [ARTIFACT_DIR]" >&2
  exit 2
fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$bin" ] || { echo "run.sh: $1 is not an executable" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "run.sh: no chromium at $chromium (apt-get install -y chromium, or set CHROMIUM)" >&2; exit 2; }

start=$SECONDS
npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
echo "-- npm ci took $((SECONDS - start))s"
CHROMIUM=$chromium node "$here/host.mjs" "$bin" ${2:+"$2"}
echo "-- the MCP App session took $((SECONDS - start))s"
