#!/usr/bin/env bash
# Checks every golden chart of the graph package with Mermaid's own parser
# (mermaid and jsdom, pinned in package.json; Node 20 or newer, no browser).
#
#   bash e2e/mermaid/run.sh
#
# The Go tests keep the golden files equal to what `stepwise graph` prints,
# so this checks the command's output for every example and edge case.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
npm ci --prefix "$here" --no-audit --no-fund >/dev/null
node "$here/check.mjs" "$root"/internal/graph/testdata/examples/*.mmd "$root"/internal/graph/testdata/cases/*.mmd
