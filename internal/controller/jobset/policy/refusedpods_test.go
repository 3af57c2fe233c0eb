package policy

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// TestDecidePodCreation: a JobSet whose pods cannot be created says so,
// keeps its domains for podCreationGrace, then deletes its Jobs and waits
// podCreationRetry before it tries again; once pods exist it says so.
func TestDecidePodCreation(t *testing.T) {
	refused := &PodRefusal{Job: "js-w-0", Message: `Error creating: pods "js-w-0-0" is forbidden: no PriorityClass with name nope was found`}
	cond := func(typ api.JobSetConditionType, status metav1.ConditionStatus, reason string, ago time.Duration) metav1.Condition {
		return metav1.Condition{Type: string(typ), Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	withPods := func(jobs []*batchv1.Job) []*batchv1.Job {
		for _, j := range jobs {
			j.Status.Active = 2
		}
		return jobs
	}
	placed := cond(TopologyAssigned, metav1.ConditionTrue, "DomainsAssigned", time.Minute)
	cases := []struct {
		name       string
		conditions []metav1.Condition
		refusal    *PodRefusal
		pods       bool
		// want
		create, deleted int
		podsCreated     string // "Status Reason" of ChildPodsCreated, "" when absent
		topology        string // "Status Reason" of TopologyAssigned
		requeue         time.Duration
	}{
		{name: "pods refused: say so, keep the domains for the grace",
			conditions: []metav1.Condition{placed}, refusal: refused,
			podsCreated: "False PodCreationFailed", topology: "True DomainsAssigned", requeue: podCreationGrace},
		{name: "refused past the grace: the Jobs go, the domains are released",
			conditions: []metav1.Condition{placed, cond(ChildPodsCreated, metav1.ConditionFalse, PodCreationFailedReason, podCreationGrace)}, refusal: refused,
			deleted: 2, podsCreated: "False PodCreationFailed", topology: "False PodCreationFailed", requeue: podCreationRetry},
		{name: "refused, not placed: the condition alone",
			refusal: refused, podsCreated: "False PodCreationFailed"},
		{name: "released: no Jobs until the retry",
			conditions: []metav1.Condition{cond(TopologyAssigned, metav1.ConditionFalse, PodCreationFailedReason, 10*time.Second),
				cond(ChildPodsCreated, metav1.ConditionFalse, PodCreationFailedReason, time.Minute)},
			podsCreated: "False PodCreationFailed", topology: "False PodCreationFailed", requeue: podCreationRetry - 10*time.Second},
		{name: "released, retry due: the Jobs are created again",
			conditions: []metav1.Condition{cond(TopologyAssigned, metav1.ConditionFalse, PodCreationFailedReason, podCreationRetry),
				cond(ChildPodsCreated, metav1.ConditionFalse, PodCreationFailedReason, 2*time.Minute)},
			create: 2, podsCreated: "False PodCreationFailed", topology: "False PodCreationFailed"},
		{name: "pods created after a refusal: True again",
			conditions: []metav1.Condition{placed, cond(ChildPodsCreated, metav1.ConditionFalse, PodCreationFailedReason, time.Minute)}, pods: true,
			podsCreated: "True PodsCreated", topology: "True DomainsAssigned"},
		{name: "pods as usual: no condition",
			conditions: []metav1.Condition{placed}, pods: true, topology: "True DomainsAssigned"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js := jobSet(2, func(js *api.JobSet) { js.Status.Conditions = c.conditions })
			var jobs []*batchv1.Job
			released := strings.HasPrefix(c.topology, "False") && c.refusal == nil
			if !released {
				jobs = childJobs(js)
				if c.pods {
					jobs = withPods(jobs)
				}
			}
			p := Decide(Observed{JobSet: js, Jobs: jobs, Now: now, ServiceExists: true, PodsRefused: c.refusal})
			if len(p.Create) != c.create || len(p.Delete) != c.deleted || p.ReleaseDomains != (c.deleted > 0) {
				t.Errorf("create %d, delete %d, release %v; want %d, %d", len(p.Create), len(p.Delete), p.ReleaseDomains, c.create, c.deleted)
			}
			if got := statusReason(p.Status.Conditions, ChildPodsCreated); got != c.podsCreated {
				t.Errorf("ChildPodsCreated %q, want %q", got, c.podsCreated)
			}
			if got := statusReason(p.Status.Conditions, TopologyAssigned); got != c.topology {
				t.Errorf("TopologyAssigned %q, want %q", got, c.topology)
			}
			if p.RequeueAfter != c.requeue {
				t.Errorf("requeue after %s, want %s", p.RequeueAfter, c.requeue)
			}
			if c.podsCreated == "False PodCreationFailed" {
				for _, cnd := range p.Status.Conditions {
					if cnd.Type == string(ChildPodsCreated) && c.refusal != nil && !strings.Contains(cnd.Message, "no PriorityClass with name nope") {
						t.Errorf("ChildPodsCreated message %q lacks the Job controller's", cnd.Message)
					}
				}
			}
		})
	}
}

func statusReason(conds []metav1.Condition, typ api.JobSetConditionType) string {
	for _, c := range conds {
		if c.Type == string(typ) {
			return string(c.Status) + " " + c.Reason
		}
	}
	return ""
}
