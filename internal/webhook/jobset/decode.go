package jobset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Paths are upstream's.
const (
	MutatePath   = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
	ValidatePath = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
)

// readable refuses, naming the field, a JobSet that cannot be read into
// the API's types, before handler sees it. The webhooks run before the
// API server's schema validation, so without it a bad quantity (a
// google.com/tpu limit of "4x") was refused with the decoder's message
// and no field.
type readable struct{ handler admission.Handler }

func (h readable) Handle(ctx context.Context, req admission.Request) admission.Response {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete || len(raw) == 0 {
		return h.handler.Handle(ctx, req)
	}
	var js api.JobSet
	err := json.Unmarshal(raw, &js)
	if err == nil {
		return h.handler.Handle(ctx, req)
	}
	var obj any
	if json.Unmarshal(raw, &obj) != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	errs := quantityErrors(obj, nil)
	if len(errs) == 0 {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the object cannot be read as a JobSet: %w", err))
	}
	status := apierrors.NewInvalid(api.GroupVersion.WithKind("JobSet").GroupKind(), req.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// quantityErrors finds, anywhere under v, resource limits and requests
// that are not quantities, each with its path.
func quantityErrors(v any, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			child := fieldChild(path, k)
			if (k == "limits" || k == "requests") && path != nil && isResources(path) {
				if m, ok := v[k].(map[string]any); ok {
					errs = append(errs, badQuantities(m, child)...)
					continue
				}
			}
			errs = append(errs, quantityErrors(v[k], child)...)
		}
	case []any:
		for i, item := range v {
			errs = append(errs, quantityErrors(item, path.Index(i))...)
		}
	}
	return errs
}

func badQuantities(m map[string]any, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(m)) {
		s, ok := m[name].(string)
		if !ok {
			continue // numbers are quantities
		}
		if _, err := resource.ParseQuantity(s); err != nil {
			errs = append(errs, field.Invalid(path.Key(name), s,
				`not a quantity: a number with an optional suffix, e.g. "4", "500m", "8Gi"`))
		}
	}
	return errs
}

func fieldChild(path *field.Path, k string) *field.Path {
	if path == nil {
		return field.NewPath(k)
	}
	return path.Child(k)
}

// isResources: path ends in a "resources" field.
func isResources(path *field.Path) bool {
	return strings.HasSuffix(path.String(), "resources")
}
