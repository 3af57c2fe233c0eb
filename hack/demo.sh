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
echo
echo "==> the seed's multislice JobSet, verbatim (examples/seed-multislice-job.yaml): 4 slices x 2 hosts"
kubectl delete jobset multislice-job --ignore-not-found --wait=true >/dev/null
kubectl apply -f "$root/examples/seed-multislice-job.yaml"
kubectl wait --for=jsonpath='{.status.replicatedJobsStatus[0].ready}'=4 jobset/multislice-job --timeout=120s
kubectl get jobset multislice-job
kubectl get jobs -l jobset.sigs.k8s.io/jobset-name=multislice-job
kubectl get pods -l jobset.sigs.k8s.io/jobset-name=multislice-job -o wide
kubectl get service multislice-job
cat <<MSG

The cluster keeps running. Use it with kubectl:
  export KUBECONFIG=$KUBECONFIG
  kubectl get nodes -L cloud.google.com/gke-nodepool,cloud.google.com/gke-tpu-topology
  $ms status
Try a failure: delete one pod and watch every slice restart (status.restarts goes to 1):
  kubectl delete pod -l jobset.sigs.k8s.io/job-index=0 --wait=false; kubectl get jobset -w
Stop it with:
  $ms down
MSG
