#!/usr/bin/env bash
# Install the Node.js OTLP exporters that tests/test_collector_node_exporters.py sends with, from
# tests/node/package.json and its package-lock.json (exact versions), into a cache folder named by the hash
# of those two files: an install is made once per lock, shared by every checkout, and never half-made
# (built aside, then renamed into place). Idempotent: `make test` calls it every time.
#
#   scripts/install-node-exporters.sh                        # into ~/.cache/tracevals/node-exporters/<hash>
#   TRACEVALS_NODE_EXPORTERS=/some/dir ...                  # another cache folder
#   TRACEVALS_REQUIRE_NODE=1 ...                            # CI: fail when it cannot be installed (default: warn)
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${TRACEVALS_NODE_EXPORTERS:-${XDG_CACHE_HOME:-$HOME/.cache}/tracevals/node-exporters}"
NAME=install-node-exporters
SKIPPED="the Node exporter tests will be SKIPPED; install Node.js >= 20.6 and npm"
REQUIRE="${TRACEVALS_REQUIRE_NODE:-0}"
. scripts/optional-install.sh

command -v node >/dev/null 2>&1 || give_up "no node on the PATH"
command -v npm >/dev/null 2>&1 || give_up "no npm on the PATH"
# The same name the tests compute (tests/fixtures/node_exporters.py): the lock's files, hashed together.
HASH="$(cat tests/node/package.json tests/node/package-lock.json | sha256sum | cut -c1-16)"
DEST="$CACHE/$HASH"
if [ -d "$DEST/node_modules" ]; then
  echo "install-node-exporters: already installed ($HASH)"
  exit 0
fi
mkdir -p "$CACHE"
TMP="$(mktemp -d "$CACHE/.install-XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
cp tests/node/package.json tests/node/package-lock.json "$TMP/"
if ! (cd "$TMP" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
  give_up "npm ci failed (is the npm registry reachable?)"
fi
# Another install may have finished meanwhile: keep the first, both are the same lock.
mv -T "$TMP" "$DEST" 2>/dev/null || true
echo "install-node-exporters: installed $(node --version) exporters ($HASH) in $DEST"
