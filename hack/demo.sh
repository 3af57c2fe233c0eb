#!/usr/bin/env bash
# make demo: start the local cluster (if needed) and run a TPU Indexed Job on it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ms="$root/bin/multislice"
home=${MULTISLICE_HOME:-$HOME/.multislice}
export KUBECONFIG="$home/kubeconfig"

"$ms" up
echo
echo "==> the simulated TPU fleet"
"$ms" nodepool list
echo
"$ms" nodepool status -l MultisliceGroup=multislice-group-1
echo
echo "==> an Indexed Job: 2 workers, each requesting google.com/tpu: 4 (examples/tpu-indexed-job.yaml)"
kubectl delete job tpu-hello --ignore-not-found --wait=true >/dev/null
kubectl apply -f "$root/examples/tpu-indexed-job.yaml"
kubectl wait --for=condition=Complete job/tpu-hello --timeout=120s
kubectl get job tpu-hello
kubectl get pods -l job-name=tpu-hello -o wide \
  -L batch.kubernetes.io/job-completion-index
cat <<MSG

The cluster keeps running. Use it with kubectl:
  export KUBECONFIG=$KUBECONFIG
  kubectl get nodes -L cloud.google.com/gke-nodepool,cloud.google.com/gke-tpu-topology
  $ms status
Stop it with:
  $ms down
MSG
