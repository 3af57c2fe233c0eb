package jobset

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/workload"
)

// Webhook serves MutatePath and ValidatePath, the paths upstream uses.
type Webhook struct {
	Gates features.Gates
	// Classes reads PriorityClasses, so that a JobSet naming one that does
	// not exist is refused at once, not its pods later (nil: not checked).
	Classes client.Reader
}

// SetupWithManager registers both webhooks, each behind readable.
func (w *Webhook) SetupWithManager(mgr ctrl.Manager) error {
	srv := mgr.GetWebhookServer()
	srv.Register(MutatePath, &admission.Webhook{Handler: readable{admission.WithDefaulter[*api.JobSet](mgr.GetScheme(), w).Handler}})
	srv.Register(ValidatePath, &admission.Webhook{Handler: readable{admission.WithValidator[*api.JobSet](mgr.GetScheme(), w).Handler}})
	return nil
}

// Default implements admission.Defaulter.
func (w *Webhook) Default(ctx context.Context, js *api.JobSet) error {
	Default(js)
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Create {
		w.defaultForKueue(js)
	}
	return nil
}

// defaultForKueue: a JobSet queued in Kueue whose pods ask for dynamic
// super-slices asks Kueue's topology-aware scheduling for hosts a Slice
// can be formed from (slicing.AskKueueForCubes), when the manager forms
// Slices (DynamicSlicing); only at creation, before Kueue reads its pod sets.
func (w *Webhook) defaultForKueue(js *api.JobSet) {
	if !w.Gates.DynamicSlicing || js.Labels[workload.QueueLabel] == "" {
		return
	}
	for i := range js.Spec.ReplicatedJobs {
		slicing.AskKueueForCubes(&js.Spec.ReplicatedJobs[i].Template.Spec.Template)
	}
}

// ValidateCreate implements admission.Validator.
func (w *Webhook) ValidateCreate(ctx context.Context, js *api.JobSet) (admission.Warnings, error) {
	return Warnings(js, w.Gates), invalid(js, append(ValidateCreate(js, w.Gates), w.missingClasses(ctx, js)...))
}

// missingClasses refuses a priorityClassName no PriorityClass has: its
// pods would all be refused, and hot-swap and the queue rank by it. An
// error reading the class lets the JobSet through (the pods' admission
// still judges).
func (w *Webhook) missingClasses(ctx context.Context, js *api.JobSet) field.ErrorList {
	if w.Classes == nil {
		return nil
	}
	var errs field.ErrorList
	for i, rj := range js.Spec.ReplicatedJobs {
		name := rj.Template.Spec.Template.Spec.PriorityClassName
		if name == "" {
			continue
		}
		var pc schedulingv1.PriorityClass
		if err := w.Classes.Get(ctx, client.ObjectKey{Name: name}, &pc); apierrors.IsNotFound(err) {
			errs = append(errs, field.NotFound(field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec", "template", "spec", "priorityClassName"),
				name+": no such PriorityClass; create it first (kubectl create priorityclass "+name+" --value=N) or name one of kubectl get priorityclasses"))
		}
	}
	return errs
}

// ValidateUpdate implements admission.Validator.
func (w *Webhook) ValidateUpdate(_ context.Context, old, js *api.JobSet) (admission.Warnings, error) {
	return Warnings(js, w.Gates), invalid(js, ValidateUpdate(old, js, w.Gates))
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (w *Webhook) ValidateDelete(context.Context, *api.JobSet) (admission.Warnings, error) {
	return nil, nil
}

// invalid turns field errors into a 422 Invalid status, as upstream returns.
func invalid(js *api.JobSet, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(api.GroupVersion.WithKind("JobSet").GroupKind(), js.Name, errs)
}
