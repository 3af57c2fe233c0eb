package jobset

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/controller/jobset/policy"
)

// RegardingUIDIndex indexes the cached FailedCreate events by the UID of
// the Job they are about.
const RegardingUIDIndex = ".regarding.uid"

// findPodRefusal reads, from the cache, the Job controller's FailedCreate
// events of the first podless Job (the cache holds only those events:
// objcache.Options). nil when there is none.
func findPodRefusal(ctx context.Context, events client.Reader, jobs []*batchv1.Job, now time.Time) (*policy.PodRefusal, error) {
	candidates := policy.Podless(jobs, now)
	if events == nil || len(candidates) == 0 {
		return nil, nil
	}
	sort.Slice(candidates, func(i, k int) bool { return candidates[i].Name < candidates[k].Name })
	j := candidates[0]
	var list eventsv1.EventList
	if err := events.List(ctx, &list, client.InNamespace(j.Namespace), client.MatchingFields{RegardingUIDIndex: string(j.UID)}); err != nil {
		return nil, fmt.Errorf("read the FailedCreate events of job %s: %w", j.Name, err)
	}
	var last *eventsv1.Event
	for i := range list.Items {
		if e := &list.Items[i]; e.Reason == "FailedCreate" && (last == nil || eventTime(e).After(eventTime(last))) {
			last = e
		}
	}
	if last == nil {
		return nil, nil
	}
	return &policy.PodRefusal{Job: j.Name, Message: last.Note}, nil
}

// eventTime is when the event was last seen (the Job controller writes
// core/v1 events, which keep it in the deprecated fields).
func eventTime(e *eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
