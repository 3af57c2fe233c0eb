#!/usr/bin/env bash
# Installs the Debian packages the tests and real hosts need, by package name
# with the minimum versions in internal/versions/versions.env (never an exact
# revision): Chromium for the dashboard's browser test; runc, busybox-static,
# iproute2 and iptables for the local cluster's real hosts (containers, the
# images they run, the pod bridge, Service rules).
set -euo pipefail
cd "$(dirname "$0")/.."
floor() { sed -n "s/^$1=//p" internal/versions/versions.env; }
exec ./hack/apt-install.sh \
  chromium "$(floor CHROMIUM_MIN_VERSION)" \
  runc "$(floor RUNC_MIN_VERSION)" \
  busybox-static "$(floor BUSYBOX_MIN_VERSION)" \
  iproute2 "$(floor IPROUTE2_MIN_VERSION)" \
  iptables "$(floor IPTABLES_MIN_VERSION)"
