package view

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
