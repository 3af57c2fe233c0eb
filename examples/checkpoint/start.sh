#!/usr/bin/env bash
# Startup script for a multislice training pod: find the latest complete
# checkpoint under a shared path and resume from it, so that after a slice is
# repaired and every slice restarts, training continues where it stopped.
#
# Environment (all set for you on Multislice):
#   CHECKPOINT_DIR          shared storage, e.g. a volumeClaimPolicies PVC or a GCS mount
#   JOBSET_NAME             run name (downward API: jobset.sigs.k8s.io/jobset-name)
#   JOBSET_RESTART_ATTEMPT  0 on the first start, N after the N-th restart (injected
#                           by the TPU webhook from jobset.sigs.k8s.io/restart-attempt)
#   TPU_WORKER_ID, MEGASCALE_SLICE_ID  who this process is
set -euo pipefail

run_dir="${CHECKPOINT_DIR:?set CHECKPOINT_DIR to shared storage}/${JOBSET_NAME:-run}"
attempt="${JOBSET_RESTART_ATTEMPT:-0}"
mkdir -p "$run_dir"

# A checkpoint counts only once its writer marked it complete: a slice that
# failed mid-write leaves a step directory without the COMPLETE marker.
latest=""
for step in $(ls -1 "$run_dir" 2>/dev/null | grep -E '^step_[0-9]+$' | sort -t_ -k2 -n); do
  [[ -f "$run_dir/$step/COMPLETE" ]] && latest="$step"
done

if [[ -n "$latest" ]]; then
  echo "restart attempt $attempt: resuming from $run_dir/$latest"
  resume=(--resume_from="$run_dir/$latest")
elif [[ "$attempt" != "0" ]]; then
  echo "restart attempt $attempt: no complete checkpoint yet, starting from scratch"
  resume=()
else
  echo "first start: no checkpoint, starting from scratch"
  resume=()
fi

# Only one worker writes checkpoints (slice 0, worker 0); every worker reads.
if [[ "${MEGASCALE_SLICE_ID:-0}" == "0" && "${TPU_WORKER_ID:-0}" == "0" ]]; then
  export CHECKPOINT_WRITER=1
fi
exec python train.py --checkpoint_dir="$run_dir" "${resume[@]}" "$@"
