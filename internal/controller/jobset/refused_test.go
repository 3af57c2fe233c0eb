package jobset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/multislice/multislice/internal/gke"
)

func TestAfterCreate(t *testing.T) {
	now := time.Now()
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "js-w-0",
		field.ErrorList{field.Invalid(field.NewPath("spec", "template"), "x", "bad")})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "js-w-0", fmt.Errorf("quota"))
	placed := []metav1.Condition{{Type: string(TopologyAssigned), Status: metav1.ConditionTrue, Reason: "DomainsAssigned"}}
	refused := []metav1.Condition{{Type: string(ChildJobsCreated), Status: metav1.ConditionFalse, Reason: JobCreationRefusedReason}}
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		err        error
		// want: ChildJobsCreated's status after ("" none); release: the
		// domains are let go.
		want, topology metav1.ConditionStatus
		release        bool
	}{
		{"created", nil, nil, "", "", false},
		{"created after a refusal", refused, nil, metav1.ConditionTrue, "", false},
		{"transient error: retried, nothing said", placed, apierrors.NewServerTimeout(schema.GroupResource{Resource: "jobs"}, "create", 1), "", metav1.ConditionTrue, false},
		{"invalid, not placed", nil, invalid, metav1.ConditionFalse, "", false},
		{"invalid, placed: domains let go", placed, invalid, metav1.ConditionFalse, metav1.ConditionFalse, true},
		{"forbidden, placed", placed, forbidden, metav1.ConditionFalse, metav1.ConditionFalse, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Create: []*batchv1.Job{{}}, HoldDomains: map[string]map[string]string{gke.NodePoolLabel: {"js-w-0": "np-1"}}}
			p.Status.Conditions = append([]metav1.Condition(nil), tc.conditions...)
			remember := afterCreate(p, tc.err, now)
			if remember != tc.release || p.ReleaseDomains != tc.release {
				t.Errorf("remember %v, ReleaseDomains %v; want %v", remember, p.ReleaseDomains, tc.release)
			}
			if tc.release && p.HoldDomains != nil {
				t.Errorf("released, yet still holds %v", p.HoldDomains)
			}
			got := meta.FindStatusCondition(p.Status.Conditions, string(ChildJobsCreated))
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("ChildJobsCreated written: %+v", got)
			case tc.want != "" && (got == nil || got.Status != tc.want):
				t.Errorf("ChildJobsCreated = %+v, want %s", got, tc.want)
			case tc.want == metav1.ConditionFalse && !strings.Contains(got.Message, "refuses the child Jobs"):
				t.Errorf("message %q does not say the Jobs are refused", got.Message)
			}
			if p.StatusChanged != (tc.want != "") {
				t.Errorf("StatusChanged %v", p.StatusChanged)
			}
			if topo := meta.FindStatusCondition(p.Status.Conditions, string(TopologyAssigned)); tc.topology != "" && (topo == nil || topo.Status != tc.topology) {
				t.Errorf("TopologyAssigned = %+v, want %s", topo, tc.topology)
			}
		})
	}
}
