// Package tpu serves GKE's TPU Job webhooks (/mutate-batch-v1-job,
// /validate-batch-v1-job) over the pure checks and injection of tpujob.
package tpu

import (
	"context"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	jobset "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/tpujob"
)

// MatchTPU is the CEL matchCondition that keeps every Job that requests no
// TPU away from these webhooks, so an outage of the manager never blocks one.
const MatchTPU = `object.spec.template.spec.containers.exists(c, ` + tpuContainer + `) || ` +
	`(has(object.spec.template.spec.initContainers) && object.spec.template.spec.initContainers.exists(c, ` + tpuContainer + `))`

const tpuContainer = `has(c.resources) && ` +
	`((has(c.resources.limits) && 'google.com/tpu' in c.resources.limits) || ` +
	`(has(c.resources.requests) && 'google.com/tpu' in c.resources.requests))`

// JobWebhook serves /mutate-batch-v1-job and /validate-batch-v1-job.
type JobWebhook struct {
	// StandAside makes both webhooks allow every Job unchanged: on GKE,
	// GKE's own webhook injects the TPU environment and ours must not add
	// a second one. The paths keep answering, so the webhook configurations
	// are the same everywhere.
	StandAside bool
}

// SetupWithManager registers both webhooks.
func (w *JobWebhook) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &batchv1.Job{}).WithDefaulter(w).WithValidator(w).Complete()
}

// Default injects the TPU environment.
func (w *JobWebhook) Default(_ context.Context, job *batchv1.Job) error {
	if w.StandAside {
		return nil
	}
	tpujob.Inject(job)
	return nil
}

// ValidateCreate refuses TPU Jobs whose shape cannot run and advises on
// the rest (CheckJobSpec).
func (w *JobWebhook) ValidateCreate(_ context.Context, job *batchv1.Job) (admission.Warnings, error) {
	if w.StandAside {
		return nil, nil
	}
	slices := 1
	if n, err := strconv.Atoi(job.Labels[jobset.ReplicatedJobReplicas]); err == nil && job.Labels[jobset.JobSetNameKey] != "" {
		slices = n
	}
	f := tpujob.CheckJobSpec(&job.Spec, slices, field.NewPath("spec"))
	if len(f.Errors) == 0 {
		return f.Advice, nil
	}
	return f.Advice, apierrors.NewInvalid(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), job.Name, f.Errors)
}

// ValidateUpdate allows every update: the shape of a Job's pods is immutable.
func (w *JobWebhook) ValidateUpdate(context.Context, *batchv1.Job, *batchv1.Job) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete allows every deletion.
func (w *JobWebhook) ValidateDelete(context.Context, *batchv1.Job) (admission.Warnings, error) {
	return nil, nil
}
