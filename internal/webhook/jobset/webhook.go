package jobset

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
)

// Webhook serves MutatePath and ValidatePath, the paths upstream uses.
type Webhook struct{ Gates features.Gates }

// SetupWithManager registers both webhooks, each behind readable.
func (w *Webhook) SetupWithManager(mgr ctrl.Manager) error {
	srv := mgr.GetWebhookServer()
	srv.Register(MutatePath, &admission.Webhook{Handler: readable{admission.WithDefaulter[*api.JobSet](mgr.GetScheme(), w).Handler}})
	srv.Register(ValidatePath, &admission.Webhook{Handler: readable{admission.WithValidator[*api.JobSet](mgr.GetScheme(), w).Handler}})
	return nil
}

// Default implements admission.Defaulter.
func (w *Webhook) Default(_ context.Context, js *api.JobSet) error {
	Default(js)
	return nil
}

// ValidateCreate implements admission.Validator.
func (w *Webhook) ValidateCreate(_ context.Context, js *api.JobSet) (admission.Warnings, error) {
	return Warnings(js, w.Gates), invalid(js, ValidateCreate(js, w.Gates))
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
