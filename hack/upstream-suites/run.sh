#!/usr/bin/env bash
# Runs upstream JobSet's own integration suites (test/integration/webhook and
# test/integration/controller) against `multislice manager`: each suite's
# BeforeSuite is replaced by suite_test.go.tmpl, which starts an envtest API
# server with Multislice's CRD and bin/multislice manager beside it, in the
# configurations upstream's specs need (gates on or off; controllers only, as
# upstream runs its controller suite). Prints each run's failures and counts.
#
#   hack/upstream-suites/run.sh UPSTREAM_SOURCE   # a checkout of kubernetes-sigs/jobset
#
# Needs `make binaries build` (envtest binaries, bin/multislice) and the Go
# module proxy (upstream's test dependencies).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=${1:?usage: $0 UPSTREAM_JOBSET_SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src"/. "$work"
rm -rf "$work/.git"
for pair in webhook:webhooktest controller:controllertest; do
	dir=${pair%%:*} pkg=${pair##*:}
	sed "s/^package PKG/package $pkg/; s/SUITE/$dir suite/" "$root/hack/upstream-suites/suite_test.go.tmpl" >"$work/test/integration/$dir/suite_test.go"
done
KUBEBUILDER_ASSETS=$(ls -d "$root"/bin/envtest-*)
export KUBEBUILDER_ASSETS MULTISLICE_CRD=$root/config/crd/bases MULTISLICE_BIN=$root/bin/multislice
run() {
	echo "== $1 suite, multislice manager $2"
	(cd "$work" && MULTISLICE_ARGS="$2" go test -count=1 -timeout 20m "./test/integration/$1/" -ginkgo.v 2>&1 |
		sed 's/\x1b\[[0-9;]*m//g' | grep -E '^\s+\[FAIL\]|^Ran |Passed') || true
}
run webhook "--controllers=none"
run webhook "--controllers=none --feature-gates=ElasticJobSet=true"
run controller "--webhooks=none"
run controller "--webhooks=none --feature-gates=RestartJob=true,ElasticJobSet=true"
run controller ""
