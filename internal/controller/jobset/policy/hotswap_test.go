package policy

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/internal/workload"
)

// TestHotSwapTaker: a restarted JobSet that finds no free pool asks for
// the holders' facts, then takes the lower-priority holder's pool, says
// so, and names the victim for the reconciler to mark; one that never ran,
// one that opted out, or a manager without hot-swap waits.
func TestHotSwapTaker(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	taker := func(restarts int32, ann map[string]string) *api.JobSet {
		return testobj.NewJobSet("ns", "high").ReplicatedJob("slice", 2, 2).Edit(func(js *api.JobSet) {
			js.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel}
			for k, v := range ann {
				js.Annotations[k] = v
			}
			js.UID, js.CreationTimestamp = "u", metav1.NewTime(now)
			js.Status.Restarts = restarts
		}).Obj()
	}
	snapshot := func() placement.Snapshot {
		d := pools("np-0", "np-1", "np-2")
		d[0].Nodes[1].Healthy = false // the failed slice's pool
		d[2].Holder = "ns/low"
		return placement.Snapshot{Domains: d}
	}
	holders := map[string]placement.Holder{"ns/low": {Priority: 100, Attempt: 3}}
	cases := []struct {
		name     string
		js       *api.JobSet
		hotSwap  bool
		holders  map[string]placement.Holder
		asks     bool
		victims  int
		waitsWhy string
	}{
		{name: "asks for the holders first", js: taker(1, nil), hotSwap: true, asks: true},
		{name: "takes the lower-priority pool", js: taker(1, nil), hotSwap: true, holders: holders, victims: 1},
		{name: "a JobSet that never ran waits (that is preemption, not repair)", js: taker(0, nil), hotSwap: true, holders: holders, waitsWhy: "fewer are free now"},
		{name: "opted out", js: taker(1, map[string]string{api.HotSwapAnnotation: "false"}), hotSwap: true, holders: holders, waitsWhy: "fewer are free now"},
		{name: "the manager's switch off", js: taker(1, nil), holders: holders, waitsWhy: "fewer are free now"},
		{name: "never an equal priority", js: taker(1, nil), hotSwap: true, holders: map[string]placement.Holder{"ns/low": {Priority: 1000}}, waitsWhy: "fewer are free now"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &Placement{Keys: map[string]KeyPlacement{gke.NodePoolLabel: {Snapshot: snapshot()}}, Priority: 1000,
				HotSwap: tc.hotSwap, Holders: tc.holders}
			p := Decide(Observed{JobSet: tc.js, Now: now, Places: true, Placement: in})
			if p.NeedsHolders != tc.asks {
				t.Fatalf("NeedsHolders = %v, want %v", p.NeedsHolders, tc.asks)
			}
			if tc.asks {
				return
			}
			cond := meta.FindStatusCondition(p.Status.Conditions, string(TopologyAssigned))
			if tc.waitsWhy != "" {
				if len(p.Create) != 0 || len(p.HotSwap) != 0 || cond == nil || !strings.Contains(cond.Message, tc.waitsWhy) {
					t.Fatalf("create %d, hot-swap %v, condition %+v: want it to wait saying %q", len(p.Create), p.HotSwap, cond, tc.waitsWhy)
				}
				return
			}
			if len(p.HotSwap) != tc.victims || p.HotSwap[0].JobSet != "ns/low" || p.HotSwap[0].Attempt != 3 || p.HotSwap[0].Pools[0] != "np-2" {
				t.Fatalf("hot-swap %+v, want ns/low's np-2 at its attempt 3", p.HotSwap)
			}
			if p.HoldDomains[gke.NodePoolLabel]["high-slice-0"] == "np-0" || len(p.Create) != 2 {
				t.Fatalf("hold %v, create %d: want both Jobs created, off the broken pool", p.HoldDomains, len(p.Create))
			}
			if cond == nil || cond.Reason != api.HotSwapReason || !strings.Contains(cond.Message, "ns/low (priority 100): np-2") {
				t.Fatalf("condition %+v, want %s naming the victim and its pool", cond, api.HotSwapReason)
			}
		})
	}
}

// TestHotSwapVictim: a JobSet marked at its current attempt restarts all
// of it without counting towards maxRestarts and says who took its pools;
// a mark of an earlier attempt does nothing; once placed again, the
// condition settles.
func TestHotSwapVictim(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	victim := func(attempt string) *api.JobSet {
		return testobj.NewJobSet("ns", "low").ReplicatedJob("slice", 1, 2).Edit(func(js *api.JobSet) {
			js.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel,
				api.HotSwappedByAnnotation: "ns/high", api.HotSwappedAttemptAnnotation: attempt}
			js.Status.Restarts, js.Status.RestartsCountTowardsMax = 2, 1
		}).Obj()
	}
	t.Run("marked now: restarts, not counting", func(t *testing.T) {
		p := Decide(Observed{JobSet: victim("2"), Now: now})
		if p.Status.Restarts != 3 || p.Status.RestartsCountTowardsMax != 1 {
			t.Fatalf("restarts %d (towards max %d), want 3 (1)", p.Status.Restarts, p.Status.RestartsCountTowardsMax)
		}
		cond := meta.FindStatusCondition(p.Status.Conditions, string(api.JobSetHotSwapped))
		if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "ns/high") {
			t.Fatalf("condition %+v, want HotSwapped True naming ns/high", cond)
		}
		if len(p.Events) == 0 || !strings.Contains(p.Events[len(p.Events)-1].Message, "ns/high") {
			t.Fatalf("events %+v, want one naming the taker", p.Events)
		}
	})
	t.Run("marked in a Kueue queue: evicted through Kueue", func(t *testing.T) {
		js := victim("2")
		js.Labels = map[string]string{workload.QueueLabel: "lq"}
		p := Decide(Observed{JobSet: js, Now: now})
		if !strings.Contains(p.EvictFromKueue, "ns/high") || p.Status.Restarts != 3 {
			t.Fatalf("evict %q, restarts %d: want the Workload evicted naming ns/high, and the restart", p.EvictFromKueue, p.Status.Restarts)
		}
		if p := Decide(Observed{JobSet: victim("2"), Now: now}); p.EvictFromKueue != "" {
			t.Fatalf("a JobSet in no Kueue queue evicted through Kueue: %q", p.EvictFromKueue)
		}
	})
	t.Run("marked at an earlier attempt: nothing more", func(t *testing.T) {
		if p := Decide(Observed{JobSet: victim("1"), Now: now}); p.Status.Restarts != 2 {
			t.Fatalf("restarts %d, want 2", p.Status.Restarts)
		}
	})
	t.Run("placed again: the condition settles", func(t *testing.T) {
		js := victim("1")
		meta.SetStatusCondition(&js.Status.Conditions, metav1.Condition{Type: string(api.JobSetHotSwapped), Status: metav1.ConditionTrue, Reason: api.PoolsTakenReason})
		in := &Placement{Keys: map[string]KeyPlacement{gke.NodePoolLabel: {Snapshot: placement.Snapshot{Domains: pools("np-0")}}}}
		p := Decide(Observed{JobSet: js, Now: now, Places: true, Placement: in})
		cond := meta.FindStatusCondition(p.Status.Conditions, string(api.JobSetHotSwapped))
		if len(p.Create) != 1 || cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != api.PoolsBackReason {
			t.Fatalf("create %d, condition %+v: want placed and HotSwapped False %s", len(p.Create), cond, api.PoolsBackReason)
		}
	})
}
