#!/usr/bin/env bash
# Installs Debian's Chromium for the dashboard's browser test (test/e2e), by
# package name with the minimum version in internal/versions/versions.env.
set -euo pipefail
cd "$(dirname "$0")/.."
exec ./hack/apt-install.sh chromium "$(sed -n 's/^CHROMIUM_MIN_VERSION=//p' internal/versions/versions.env)"
