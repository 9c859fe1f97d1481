#!/usr/bin/env bash
# Install Debian's Chromium for the HTML report test (tests/test_report_browser.py). Idempotent: a
# machine that has it already is left alone, so `make test` may call this every time.
#
#   scripts/install-chromium.sh                 # as root, or with sudo available
#   TRACEVALS_CHROMIUM=/opt/chrome/chrome ...   # use a browser installed elsewhere (checked, not installed)
#   TRACEVALS_REQUIRE_CHROMIUM=1 ...            # CI: fail when it cannot be installed (default: warn)
set -euo pipefail

CHROMIUM="${TRACEVALS_CHROMIUM:-/usr/bin/chromium}"
NAME=install-chromium
SKIPPED="the HTML report test will be SKIPPED; install Chromium and/or set TRACEVALS_CHROMIUM"
REQUIRE="${TRACEVALS_REQUIRE_CHROMIUM:-0}"
. "$(dirname "$0")/optional-install.sh"

if [ -x "$CHROMIUM" ]; then
  echo "install-chromium: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM") already installed"
  exit 0
fi
if [ "$CHROMIUM" != "/usr/bin/chromium" ]; then
  give_up "TRACEVALS_CHROMIUM=$CHROMIUM is not an executable file"
fi
if ! command -v apt-get >/dev/null 2>&1; then
  give_up "no apt-get on this machine (not Debian): cannot install chromium here"
fi
if grep -qi '^ID=ubuntu' /etc/os-release 2>/dev/null; then
  # Ubuntu's `chromium` package only installs a snap, which does not run in most CI containers.
  give_up "Ubuntu packages chromium as a snap; install a Chromium build and set TRACEVALS_CHROMIUM"
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else give_up "not root and no sudo: run as root"; fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
echo "install-chromium: $("$CHROMIUM" --version) installed"
