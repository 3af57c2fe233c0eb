package jobset

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/controller/jobset/policy"
)

// findPodRefusal reads the Job controller's FailedCreate events of the
// first podless Job (events are not cached: this read happens only for a
// JobSet whose Jobs have no pods). nil when there is none.
func findPodRefusal(ctx context.Context, events client.Reader, jobs []*batchv1.Job, now time.Time) (*policy.PodRefusal, error) {
	candidates := policy.Podless(jobs, now)
	if events == nil || len(candidates) == 0 {
		return nil, nil
	}
	sort.Slice(candidates, func(i, k int) bool { return candidates[i].Name < candidates[k].Name })
	j := candidates[0]
	var list corev1.EventList
	err := events.List(ctx, &list, client.InNamespace(j.Namespace), client.MatchingFieldsSelector{Selector: fields.SelectorFromSet(fields.Set{
		"involvedObject.kind": "Job", "involvedObject.uid": string(j.UID), "reason": "FailedCreate"})})
	if err != nil {
		return nil, fmt.Errorf("read the FailedCreate events of job %s: %w", j.Name, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	last := list.Items[0]
	for _, e := range list.Items[1:] {
		if eventTime(e).After(eventTime(last)) {
			last = e
		}
	}
	return &policy.PodRefusal{Job: j.Name, Message: last.Message}, nil
}

func eventTime(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
