package view

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/workload"
)

// WorkloadOf is the admission of js's Kueue Workload (Kueue v1beta2, read
// unstructured: the one js owns) among workloads; nil when js is in no
// Kueue queue or Kueue has not made its Workload yet.
func WorkloadOf(js *api.JobSet, workloads []unstructured.Unstructured) *KueueAdmission {
	queue := js.Labels[workload.QueueLabel]
	if queue == "" {
		return nil
	}
	for i := range workloads {
		w := &workloads[i] // a Kueue Workload, not a workload.Spec
		for _, o := range w.GetOwnerReferences() {
			if o.UID != js.UID {
				continue
			}
			raw, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
			var conds []metav1.Condition
			for _, r := range raw {
				var cond metav1.Condition
				if m, ok := r.(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
					conds = append(conds, cond)
				}
			}
			a := AdmissionOf(w.GetName(), queue, conds)
			return &a
		}
	}
	return nil
}

// KueueAdmission is where a queued JobSet's Kueue Workload stands.
type KueueAdmission struct {
	Workload string `json:"workload"`
	Queue    string `json:"queue"`
	// State is admitted, evicted, quota reserved (its admission checks
	// pending), finished or pending; Why is Kueue's reason and message.
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
}

// AdmissionOf reads a Workload's conditions as Kueue writes them.
func AdmissionOf(workload, queue string, conds []metav1.Condition) KueueAdmission {
	a := KueueAdmission{Workload: workload, Queue: queue}
	why := func(c *metav1.Condition) string { return fmt.Sprintf("%s: %s", c.Reason, c.Message) }
	is := func(t string) *metav1.Condition {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
		return nil
	}
	switch {
	case is("Finished") != nil:
		a.State, a.Why = "finished", why(is("Finished"))
	case is("Evicted") != nil:
		a.State, a.Why = "evicted", why(is("Evicted"))
	case is("Admitted") != nil:
		a.State = "admitted"
	case is("QuotaReserved") != nil:
		a.State, a.Why = "quota reserved", "waiting for its admission checks"
	default:
		a.State = "pending"
		if c := meta.FindStatusCondition(conds, "QuotaReserved"); c != nil {
			a.Why = why(c)
		}
	}
	return a
}
