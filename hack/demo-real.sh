#!/usr/bin/env bash
# make demo-real: the local cluster with real hosts (examples/fleet-real.yaml),
# the trainer (examples/trainer) on two real slices, one worker's process
# SIGKILLed once a checkpoint exists, and the resume from it. The cluster
# keeps running, as with make demo. Needs root (real hosts).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ms="$root/bin/multislice"
home=${MULTISLICE_HOME:-$HOME/.multislice}
export KUBECONFIG="$home/kubeconfig"
checkpoints=/var/tmp/multislice-checkpoints/trainer  # examples/trainer-jobset.yaml's hostPath
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

"$ms" up --fleet "$root/examples/fleet-real.yaml"
echo
echo "==> the trainer's image: a static build of examples/trainer, loaded into the local registry"
CGO_ENABLED=0 go build -o "$root/bin/trainer" ./examples/trainer
"$ms" image load "$root/bin/trainer" ghcr.io/multislice/trainer:dev
echo
echo "==> the trainer on two real v4-16 slices (examples/trainer-jobset.yaml)"
kubectl delete jobset trainer --ignore-not-found --wait=true >/dev/null
rm -rf "$checkpoints"
kubectl apply -f "$root/examples/trainer-jobset.yaml"
kubectl wait --for=jsonpath='{.status.replicatedJobsStatus[0].ready}'=2 jobset/trainer --timeout=180s
kubectl get pods -l jobset.sigs.k8s.io/jobset-name=trainer -o wide
echo
echo "==> waiting for a checkpoint in $checkpoints"
for _ in $(seq 1 120); do
  ls "$checkpoints"/ckpt-*.json >/dev/null 2>&1 && break
  sleep 1
done
newest=$(ls "$checkpoints"/ckpt-*.json | tail -1)
echo "newest checkpoint: $(basename "$newest")"
"$ms" logs trainer --slice 0 --worker 0 | tail -3
echo
echo "==> a worker's process is killed (SIGKILL inside its container)"
began=$(now)
"$ms" chaos kill-worker trainer --slice 1 --worker 1
kubectl wait --for=jsonpath='{.status.restarts}'=1 jobset/trainer --timeout=120s
for _ in $(seq 1 120); do
  n=$("$ms" logs trainer 2>/dev/null | grep -c 'attempt-1] resumed from checkpoint step' || true)
  [[ $n == 4 ]] && break
  sleep 1
done
echo "killed to every worker resumed from the checkpoint: $(since "$began") s"
for _ in $(seq 1 60); do  # the first step after the resume, on every worker
  n=$("$ms" logs trainer 2>/dev/null | grep -c 'attempt-1] step=' || true)
  (( n >= 4 )) && break
  sleep 1
done
"$ms" logs trainer | grep -E 'attempt-1\] (resumed|step=)' | awk '/resumed/ || ++seen[$1] <= 1'
cat <<MSG

The cluster keeps running; the trainer too. Follow it, or kill another worker:
  $ms logs trainer -f
  $ms chaos kill-worker trainer --slice 0 --worker 0
Stop it with:
  $ms down
MSG
