#!/usr/bin/env bash
# Install Debian's headless-capable `chromium` when it is missing (the test of the study's report.html
# opens the page in it). Quiet; uses sudo only when not root. Exits non-zero when it cannot install it.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: not installed and no apt-get here; install Chromium yourself" >&2
  exit 1
fi
SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo -n); fi
echo "installing chromium (apt-get)..."
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null 2>&1
