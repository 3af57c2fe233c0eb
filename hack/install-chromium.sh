#!/usr/bin/env bash
# Installs Debian's Chromium at the version pinned in internal/versions/versions.env,
# for the dashboard's browser test (test/e2e). Needs root (CI runs as root); a machine
# where /usr/bin/chromium already reports the pinned version is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(sed -n 's/^CHROMIUM_VERSION=//p' internal/versions/versions.env)
upstream=${want%%-*} # 148.0.7778.167
if command -v chromium >/dev/null && chromium --version 2>/dev/null | grep -qF "$upstream"; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install Debian's chromium=$want (as root: apt-get install chromium=$want chromium-common=$want)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-cache show "chromium=$want" >/dev/null 2>&1; then
	apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends "chromium=$want" "chromium-common=$want" >/dev/null
chromium --version
