package placement

import (
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
)

const group = gke.MultisliceGroupLabel

func cacheNode(name, poolName string, ready bool) *corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{pool: poolName, group: "g",
		gke.AcceleratorLabel: "tpu-v4-podslice", gke.TopologyLabel: "2x2x2"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
}

func pinned(ns, jobSet, uid, job, domain string) *batchv1.Job {
	return testobj.NewJob(ns, job).Label(api.JobSetNameKey, jobSet).Label(api.JobSetUIDKey, uid).
		Edit(func(j *batchv1.Job) { j.Annotations[api.ExclusiveKey] = pool }).PinnedTo(pool, domain).Obj()
}

func tpuPod(ns, name, node, jobSet string) *corev1.Pod {
	b := testobj.NewPod(ns, name).Edit(func(p *corev1.Pod) { p.Spec = testobj.TPUPod("busybox", "", "", "4") }).On(node, corev1.PodPending)
	if jobSet != "" {
		b.Label(api.JobSetNameKey, jobSet)
	}
	return b.Obj()
}

// fleetCache has pools np-0..np-(n-1) of two hosts each.
func fleetCache(n int) *Cache {
	c := NewCache(group)
	for i := 0; i < n; i++ {
		for h := 0; h < 2; h++ {
			c.SetNode(cacheNode(fmt.Sprintf("np-%d-%d", i, h), fmt.Sprintf("np-%d", i), true))
		}
	}
	return c
}

func holders(s Snapshot) map[string]string {
	out := map[string]string{}
	for _, d := range s.Domains {
		out[d.Value] = d.Holder
	}
	return out
}

func TestCacheSnapshot(t *testing.T) {
	cases := []struct {
		name    string
		events  func(c *Cache)
		holders map[string]string // domain -> holder as ns/me (uid "me") sees it
		mine    map[string]string
		healthy map[string]bool
	}{
		{name: "free fleet", events: func(*Cache) {},
			holders: map[string]string{"np-0": "", "np-1": "", "np-2": ""}, mine: map[string]string{}},
		{name: "another JobSet's pinned Job holds its domain; mine are pins",
			events: func(c *Cache) {
				c.SetJob(pinned("ns", "other", "o", "other-slice-0", "np-1"))
				c.SetJob(pinned("ns", "me", "me", "me-slice-0", "np-2"))
			},
			holders: map[string]string{"np-0": "", "np-1": "ns/other", "np-2": ""}, mine: map[string]string{"me-slice-0": "np-2"}},
		{name: "a finished or suspended Job holds nothing",
			events: func(c *Cache) {
				j := pinned("ns", "other", "o", "other-slice-0", "np-1")
				c.SetJob(j)
				j = j.DeepCopy()
				j.Spec.Suspend = ptr.To(true)
				c.SetJob(j)
				done := pinned("ns", "old", "x", "old-slice-0", "np-2")
				done.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
				c.SetJob(done)
			},
			holders: map[string]string{"np-0": "", "np-1": "", "np-2": ""}, mine: map[string]string{}},
		{name: "TPU pods occupy their domain, another's before mine; a finished pod does not",
			events: func(c *Cache) {
				c.SetPod(tpuPod("ns", "p0", "np-0-1", ""))
				c.SetPod(tpuPod("ns", "p1", "np-1-0", "me"))
				c.SetPod(tpuPod("ns", "p2", "np-1-1", "other"))
				done := tpuPod("ns", "p3", "np-2-0", "other")
				done.Status.Phase = corev1.PodSucceeded
				c.SetPod(done)
			},
			holders: map[string]string{"np-0": "pod ns/p0", "np-1": "ns/other", "np-2": ""}, mine: map[string]string{}},
		{name: "a pod seen before its node counts once the node comes",
			events: func(c *Cache) {
				c.SetPod(tpuPod("ns", "p0", "np-3-0", "other"))
				c.SetNode(cacheNode("np-3-0", "np-3", true))
				c.SetNode(cacheNode("np-3-1", "np-3", true))
			},
			holders: map[string]string{"np-0": "", "np-1": "", "np-2": "", "np-3": "ns/other"}, mine: map[string]string{}},
		{name: "a node moved to another pool takes its pods along; a pool without nodes is gone",
			events: func(c *Cache) {
				c.SetPod(tpuPod("ns", "p0", "np-2-0", "other"))
				c.SetNode(cacheNode("np-2-0", "np-0", true))
				c.DeleteNode("np-2-1")
			},
			holders: map[string]string{"np-0": "ns/other", "np-1": ""}, mine: map[string]string{}},
		{name: "deleted Jobs and pods free their domains",
			events: func(c *Cache) {
				c.SetJob(pinned("ns", "other", "o", "other-slice-0", "np-1"))
				c.SetPod(tpuPod("ns", "p0", "np-0-0", "other"))
				c.DeleteJob("ns", "other-slice-0")
				c.DeletePod("ns", "p0")
			},
			holders: map[string]string{"np-0": "", "np-1": "", "np-2": ""}, mine: map[string]string{}},
		{name: "a NotReady host makes its domain unhealthy",
			events:  func(c *Cache) { c.SetNode(cacheNode("np-1-1", "np-1", false)) },
			holders: map[string]string{"np-0": "", "np-1": "", "np-2": ""}, mine: map[string]string{},
			healthy: map[string]bool{"np-0": true, "np-1": false, "np-2": true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Events before the first snapshot and after it must agree.
			for _, early := range []bool{true, false} {
				c := fleetCache(3)
				if !early {
					c.Snapshot(pool, "ns/me", "me")
				}
				tc.events(c)
				s, mine := c.Snapshot(pool, "ns/me", types.UID("me"))
				if got := holders(s); fmt.Sprint(got) != fmt.Sprint(tc.holders) {
					t.Errorf("indexed early=%v: holders %v, want %v", !early, got, tc.holders)
				}
				if fmt.Sprint(mine) != fmt.Sprint(tc.mine) {
					t.Errorf("indexed early=%v: mine %v, want %v", !early, mine, tc.mine)
				}
				for _, d := range s.Domains {
					if want, ok := tc.healthy[d.Value]; ok && d.Healthy() != want {
						t.Errorf("%s healthy %v, want %v", d.Value, d.Healthy(), want)
					}
					if d.Group != "g" || d.ExpectedHosts != 2 {
						t.Errorf("%s: group %q, expected hosts %d; want g, 2", d.Value, d.Group, d.ExpectedHosts)
					}
				}
			}
		})
	}
}

func TestCacheMemoryAndWakeups(t *testing.T) {
	c := fleetCache(2)
	var woken []string
	c.Wake = func(js string) { woken = append(woken, js) }
	c.Hold("ns/a", "0", map[string]map[string]string{pool: {"a-slice-0": "np-0"}})
	c.Wait(Waiter{JobSet: "ns/b"})
	s, _ := c.Snapshot(pool, "ns/b", "b")
	if s.Held["ns/a"]["a-slice-0"] != "np-0" || len(s.Waiting) != 1 {
		t.Fatalf("held %v, waiting %v", s.Held, s.Waiting)
	}
	c.SetNode(cacheNode("np-0-0", "np-0", true)) // a heartbeat: nothing frees
	if len(woken) != 0 {
		t.Fatalf("woken by a heartbeat: %v", woken)
	}
	c.Release("ns/a")
	if fmt.Sprint(woken) != "[ns/b]" {
		t.Fatalf("release woke %v, want [ns/b]", woken)
	}
	c.SetPod(tpuPod("ns", "p", "np-1-0", "c"))
	c.DeletePod("ns", "p")
	c.SetNode(cacheNode("np-1-1", "np-1", false))
	c.SetNode(cacheNode("np-1-1", "np-1", true))
	if len(woken) != 3 {
		t.Fatalf("a pod gone and a node back woke %d times, want 3: %v", len(woken), woken)
	}
	c.Hold("ns/b", "0", map[string]map[string]string{pool: {"b-slice-0": "np-1"}})
	if got := c.Waiting(); len(got) != 0 {
		t.Fatalf("still waiting after Hold: %v", got)
	}
	// A reservation of another key (a Pathways head by hostname) is not one
	// of this key's, and a later Hold of one key keeps the other's.
	c.Hold("ns/b", "0", map[string]map[string]string{"kubernetes.io/hostname": {"b-head-0": "np-1-0"}})
	s, _ = c.Snapshot(pool, "ns/c", "c")
	if s.Held["ns/b"]["b-slice-0"] != "np-1" || s.Held["ns/b"]["b-head-0"] != "" {
		t.Fatalf("pool snapshot holds %v, want only b-slice-0 on np-1", s.Held["ns/b"])
	}
}

// TestPinHoldsOnlyItsKey: a Pathways head placed by hostname that also
// selects a pool holds its host, not the pool.
func TestPinHoldsOnlyItsKey(t *testing.T) {
	const host = "kubernetes.io/hostname"
	c := fleetCache(2)
	head := pinned("ns", "pw", "pw", "pw-head-0", "np-0")
	head.Annotations[api.ExclusiveKey] = host
	head.Spec.Template.Spec.NodeSelector[host] = "np-0-0"
	c.SetJob(head)
	s, _ := c.Snapshot(pool, "ns/other", "other")
	for _, d := range s.Domains {
		if d.Holder != "" {
			t.Errorf("pool %s held by %s", d.Value, d.Holder)
		}
	}
	_, mine := c.Snapshot(host, "ns/pw", "pw")
	if mine["pw-head-0"] != "np-0-0" {
		t.Errorf("own pins by hostname %v, want pw-head-0 on np-0-0", mine)
	}
}

// TestReservationFollowsThePin: a reservation a second decision moved
// elsewhere (the controller not seeing the new Job yet) follows the Job's
// pin, so the JobSet does not hold both domains; a Job of an older
// attempt, still going, leaves its successor's reservation alone.
func TestReservationFollowsThePin(t *testing.T) {
	atAttempt := func(j *batchv1.Job, attempt string) *batchv1.Job {
		j.Labels[api.RestartsKey] = attempt
		return j
	}
	held := func(c *Cache) map[string]string {
		s, _ := c.Snapshot(pool, "ns/b", "b")
		return s.Held["ns/a"]
	}
	t.Run("the Job after the hold", func(t *testing.T) {
		c := fleetCache(3)
		var woken []string
		c.Wake = func(js string) { woken = append(woken, js) }
		c.Wait(Waiter{JobSet: "ns/b"})
		c.Hold("ns/a", "0", map[string]map[string]string{pool: {"a-slice-0": "np-1", "a-slice-1": "np-2"}})
		c.SetJob(atAttempt(pinned("ns", "a", "a", "a-slice-0", "np-0"), "0"))
		if got := held(c); fmt.Sprint(got) != "map[a-slice-0:np-0 a-slice-1:np-2]" {
			t.Fatalf("reservations %v, want a-slice-0's where it is pinned, a-slice-1's (not created yet) as held", got)
		}
		s, _ := c.Snapshot(pool, "ns/b", "b")
		if got := holders(s); got["np-0"] != "ns/a" || got["np-1"] != "" {
			t.Fatalf("holders %v: want np-0 held by a's pin, np-1 free", got)
		}
		if len(woken) != 1 {
			t.Fatalf("the freed reservation woke %v, want ns/b once", woken)
		}
		// Failed, the Job holds no pin; the reservation keeps its domain
		// for the restart.
		failed := atAttempt(pinned("ns", "a", "a", "a-slice-0", "np-0"), "0")
		failed.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
		c.SetJob(failed)
		if s, _ := c.Snapshot(pool, "ns/a", "a"); s.Held["ns/a"]["a-slice-0"] != "np-0" {
			t.Fatalf("a failed Job's reservation %v, want np-0 kept", s.Held["ns/a"])
		}
	})
	t.Run("the Job before the hold", func(t *testing.T) {
		c := fleetCache(3)
		c.SetJob(atAttempt(pinned("ns", "a", "a", "a-slice-0", "np-0"), "1"))
		c.Hold("ns/a", "1", map[string]map[string]string{pool: {"a-slice-0": "np-1"}})
		if got := held(c); fmt.Sprint(got) != "map[a-slice-0:np-0]" {
			t.Fatalf("reservations %v, want a-slice-0's where it is pinned", got)
		}
	})
	t.Run("an older attempt's Job", func(t *testing.T) {
		c := fleetCache(3)
		c.Hold("ns/a", "2", map[string]map[string]string{pool: {"a-slice-0": "np-1"}})
		c.SetJob(atAttempt(pinned("ns", "a", "a", "a-slice-0", "np-0"), "1"))
		if got := held(c); got["a-slice-0"] != "np-1" {
			t.Fatalf("reservations %v: the successor's np-1 was dropped", got)
		}
	})
}
