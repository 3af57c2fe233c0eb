#!/usr/bin/env bash
# Builds the multislice binary (make build). From a cold Go cache this
# compiles Kubernetes' client libraries for several minutes, so it says how
# far it has got every 10 s instead of staying silent.
#   hack/build-multislice.sh OUTPUT
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
# Static (no cgo): `multislice up --manager=in-cluster` puts this very binary
# in the manager's image, which has no C library.
export CGO_ENABLED=0
echo "==> go build -o ${out#"$PWD"/} ./cmd/multislice"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
go build -v -o "$out" ./cmd/multislice 2>"$log" &
pid=$!
total=""
next=10
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
  if (( SECONDS - start >= next )); then
    # go build -v names each package as it compiles it (cached ones are not named).
    [[ -n $total ]] || total=$(go list -deps ./cmd/multislice 2>/dev/null | wc -l)
    done_=$(grep -cv '^#' "$log" || true)
    echo "    ${next}s: compiled $done_ packages (of about $total; the cache keeps them for next time)"
    next=$((next + 10))
  fi
done
if ! wait "$pid"; then
  grep -v '^[a-z0-9./_-]*$' "$log" >&2 || cat "$log" >&2
  exit 1
fi
(( SECONDS - start < 10 )) || echo "==> built multislice in $((SECONDS - start))s"
