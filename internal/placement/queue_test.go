package placement

import (
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	waiter := func(js string, n int, priority int32, age time.Duration) Waiter {
		return Waiter{JobSet: js, Key: pool, Priority: priority, Created: t0.Add(-age), Request: slices(js, n, true)}
	}
	for _, tc := range []struct {
		name    string
		me      Waiter
		mine    map[string]string
		domains []Domain
		held    map[string]map[string]string
		waiting []Waiter
		want    int    // domains assigned; 0: waits
		why     string // part of the reason it waits
	}{
		{name: "free pools: placed", me: waiter("ns/a", 2, 0, 0), domains: fleet("g1:4"), want: 2},
		{name: "pools held by another JobSet are not free", me: waiter("ns/b", 4, 0, 0), domains: fleet("g1:4"),
			held: map[string]map[string]string{"ns/a": {"ns/a-slice-0": "g1-np-0"}}, why: "no group has that many free now"},
		{name: "its own Job outside the request keeps its pool", me: waiter("ns/a", 4, 0, 0), domains: fleet("g1:4"),
			mine: map[string]string{"ns/a-slice-9": "g1-np-3"}, why: "no group has that many free now"},
		{name: "an older waiter that would fit goes first", me: waiter("ns/young", 2, 0, time.Minute), domains: fleet("g1:4"),
			waiting: []Waiter{waiter("ns/old", 4, 0, time.Hour)}, why: "waiting behind ns/old"},
		{name: "a higher priority waiter goes first, however young", me: waiter("ns/a", 2, 0, time.Hour), domains: fleet("g1:4"),
			waiting: []Waiter{waiter("ns/urgent", 2, 100, 0)}, why: "waiting behind ns/urgent"},
		{name: "a waiter ranked first that could never fit does not block", me: waiter("ns/small", 2, 0, 0), domains: fleet("g1:4"),
			waiting: []Waiter{waiter("ns/huge", 8, 0, time.Hour)}, want: 2},
		{name: "a waiter ranked after it does not block", me: waiter("ns/old", 2, 0, time.Hour), domains: fleet("g1:4"),
			waiting: []Waiter{waiter("ns/young", 2, 0, 0)}, want: 2},
		{name: "a waiter for another key does not block", me: waiter("ns/a", 2, 0, 0), domains: fleet("g1:4"),
			waiting: []Waiter{{JobSet: "ns/other", Key: "rack", Priority: 9, Request: slices("ns/other", 1, false)}}, want: 2},
		{name: "no node has the key", me: waiter("ns/a", 2, 0, 0), why: "no node has the label cloud.google.com/gke-nodepool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.me, tc.mine, Snapshot{Domains: tc.domains, Held: tc.held, Waiting: tc.waiting})
			if len(got.Domains) != tc.want || (tc.why != "" && !strings.Contains(got.Why, tc.why)) {
				t.Errorf("got %d domains, why %q; want %d, why containing %q", len(got.Domains), got.Why, tc.want, tc.why)
			}
		})
	}
}

func TestBefore(t *testing.T) {
	t0 := time.Now()
	old, young := Waiter{Created: t0.Add(-time.Hour)}, Waiter{Created: t0}
	high := Waiter{Created: t0, Priority: 10}
	for _, tc := range []struct {
		a, b Waiter
		want bool
	}{{old, young, true}, {young, old, false}, {high, old, true}, {old, high, false}, {old, old, false}} {
		if got := tc.a.Before(tc.b); got != tc.want {
			t.Errorf("%+v before %+v = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// MarkHolders does not change the caller's domains.
func TestMarkHoldersCopies(t *testing.T) {
	d := fleet("g1:2")
	out := MarkHolders(d, map[string]map[string]string{"ns/a": {"j": "g1-np-0"}}, "ns/b", nil, Request{})
	if out[0].Holder != "ns/a" || d[0].Holder != "" {
		t.Errorf("marked %q, original %q", out[0].Holder, d[0].Holder)
	}
}
