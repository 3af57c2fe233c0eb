package jobset

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/testobj"
)

// TestDecideOnceUnlessItPlaces: a reconcile decides once, except when the
// decision asks for a snapshot of the domains to place Jobs: then twice,
// the second time with it.
func TestDecideOnceUnlessItPlaces(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := api.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	exclusive := testobj.NewJobSet("ns", "train").ReplicatedJob("slice", 2, 2).
		Edit(func(js *api.JobSet) { js.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel} }).Obj()
	plain := testobj.NewJobSet("ns", "plain").ReplicatedJob("w", 2, 2).Obj()
	created := policy.Decide(policy.Observed{JobSet: exclusive, Now: now}).Create
	for _, tc := range []struct {
		name   string
		js     *api.JobSet
		jobs   []*batchv1.Job
		places bool
		want   int
	}{
		{"creates placed Jobs: asks for the snapshot", exclusive, nil, true, 2},
		{"its Jobs exist: nothing to place", exclusive, created, true, 1},
		{"no exclusive key", plain, nil, true, 1},
		{"placement off", exclusive, nil, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).Build(), Clock: clocktesting.NewFakeClock(now)}
			if tc.places {
				r.Domains = placement.NewCache(gke.NodePoolLabel)
			}
			calls, snapshots := 0, 0
			r.decide = func(o policy.Observed) policy.Plan {
				calls++
				if o.Placement != nil {
					snapshots++
				}
				return policy.Decide(o)
			}
			o := policy.Observed{JobSet: tc.js, Jobs: tc.jobs, Now: now, Places: tc.places}
			if _, err := r.decideAll(context.Background(), tc.js, o); err != nil {
				t.Fatal(err)
			}
			if calls != tc.want || snapshots != tc.want-1 {
				t.Errorf("Decide ran %d times (%d with a snapshot), want %d", calls, snapshots, tc.want)
			}
		})
	}
}
