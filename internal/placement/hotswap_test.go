package placement

import (
	gslices "slices"
	"testing"
)

func TestHotSwap(t *testing.T) {
	// held marks pools (by index into fleet("g1:N")) with their holders.
	held := func(n int, holders map[int]string, broken ...int) []Domain {
		ds := fleet("g1:" + string(rune('0'+n)))
		for i, h := range holders {
			ds[i].Holder = h
		}
		for _, i := range broken {
			ds[i].Nodes[0].Healthy = false
		}
		return ds
	}
	me := func(n int) Waiter {
		return Waiter{JobSet: "high", Key: pool, Priority: 1000, Request: slices("high", n, true)}
	}
	cases := []struct {
		name    string
		me      Waiter
		domains []Domain
		holders map[string]Holder
		victims []string
		freeing []string
		none    bool
	}{
		{name: "takes the lower-priority JobSet's pool", me: me(2),
			domains: held(3, map[int]string{2: "low"}, 1),
			holders: map[string]Holder{"low": {Priority: 100}}, victims: []string{"low"}},
		{name: "never an equal priority", me: me(2),
			domains: held(3, map[int]string{2: "peer"}, 1),
			holders: map[string]Holder{"peer": {Priority: 1000}}, none: true},
		{name: "never a protected one", me: me(2),
			domains: held(3, map[int]string{2: "low"}, 1),
			holders: map[string]Holder{"low": {Priority: 1, Protected: true}}, none: true},
		{name: "never a workload that is not a JobSet", me: me(2),
			domains: held(3, map[int]string{2: "pod default/x"}, 1), holders: map[string]Holder{}, none: true},
		{name: "the lowest priority first", me: me(2),
			domains: held(4, map[int]string{2: "mid", 3: "low"}, 1),
			holders: map[string]Holder{"mid": {Priority: 500}, "low": {Priority: 100}}, victims: []string{"low"}},
		{name: "then the one of fewest hosts", me: me(1),
			domains: held(4, map[int]string{0: "big", 1: "big", 2: "small"}, 3),
			holders: map[string]Holder{"big": {Priority: 100}, "small": {Priority: 100}}, victims: []string{"small"}},
		{name: "a single victim before two of lower priority", me: me(2),
			domains: held(4, map[int]string{0: "a", 1: "b", 2: "c", 3: "c"}),
			holders: map[string]Holder{"a": {Priority: 1}, "b": {Priority: 2}, "c": {Priority: 50}}, victims: []string{"c"}},
		{name: "two victims when one is not enough", me: me(2),
			domains: held(3, map[int]string{0: "a", 1: "b"}, 2),
			holders: map[string]Holder{"a": {Priority: 1}, "b": {Priority: 2}}, victims: []string{"a", "b"}},
		{name: "a victim the fit does not need keeps its pools", me: me(1),
			domains: held(3, map[int]string{0: "a", 1: "b"}, 2),
			holders: map[string]Holder{"a": {Priority: 1}, "b": {Priority: 2}}, victims: []string{"a"}},
		{name: "a JobSet taken before is freeing, not a second victim", me: me(1),
			domains: held(2, map[int]string{0: "low", 1: "lower"}),
			holders: map[string]Holder{"low": {Priority: 100, Taken: true}, "lower": {Priority: 1}}, freeing: []string{"low"}},
		{name: "nothing fits even with every victim", me: me(3),
			domains: held(3, map[int]string{0: "a"}, 1, 2),
			holders: map[string]Holder{"a": {Priority: 1}}, none: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := HotSwap(tc.me, nil, Snapshot{Domains: tc.domains}, tc.holders)
			if ok == tc.none {
				t.Fatalf("ok = %v, want %v (%+v)", ok, !tc.none, got)
			}
			if tc.none {
				return
			}
			if !gslices.Equal(got.Victims, tc.victims) || !gslices.Equal(got.Freeing, tc.freeing) {
				t.Errorf("victims %v freeing %v, want %v and %v", got.Victims, got.Freeing, tc.victims, tc.freeing)
			}
			if len(got.Domains) != len(tc.me.Request.Jobs) {
				t.Errorf("domains %v, want one per Job", got.Domains)
			}
			for _, v := range append(got.Victims, got.Freeing...) {
				if len(got.Taken[v]) == 0 {
					t.Errorf("nothing taken of %s: %v", v, got.Taken)
				}
			}
		})
	}
}
