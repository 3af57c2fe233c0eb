package slicecheck

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/tpu"
)

// fleet: cubes c0..c3 of block b, hosts c<i>-h<j>.
func fleet() map[string]slicing.Host {
	out := map[string]slicing.Host{}
	for c := range 4 {
		for j := range 16 {
			out[fmt.Sprintf("c%d-h%d", c, j)] = slicing.Host{Cube: fmt.Sprintf("c%d", c), Block: "b", Pos: slicing.HostPos(j)}
		}
	}
	return out
}

func cube(c int) []string {
	var out []string
	for j := range 16 {
		out = append(out, fmt.Sprintf("c%d-h%d", c, j))
	}
	return out
}

// twoSlices: xpk's 2 x 4x4x8, Kueue gave slice 0 cubes c2+c0, slice 1 c1+c3.
func twoSlices() []Want {
	t := tpu.Topology{4, 4, 8}
	return []Want{{Job: "dyn-slice-0", Topology: t, Hosts: append(cube(2), cube(0)...)}, {Job: "dyn-slice-1", Topology: t, Hosts: append(cube(1), cube(3)...)}}
}

func TestDecide(t *testing.T) {
	ready := func(name string, forKueue bool) Slice {
		return Slice{Name: name, Partitions: []string{"x"}, Ready: true, ForKueue: forKueue}
	}
	for _, tc := range []struct {
		name   string
		o      Observed
		form   map[string][]string // Job -> cubes
		delete []string
		state  string
		saying string
	}{
		{name: "quota reserved: both Slices formed from Kueue's hosts, the check still pending",
			o:    Observed{State: Pending, QuotaReserved: true, Wants: twoSlices(), Nodes: fleet()},
			form: map[string][]string{"dyn-slice-0": {"c2", "c0"}, "dyn-slice-1": {"c1", "c3"}}},
		{name: "formed, one not Ready yet: wait",
			o: Observed{State: Pending, QuotaReserved: true, Wants: twoSlices(), Nodes: fleet(),
				Slices: map[string]Slice{"dyn-slice-0": ready("s0", true), "dyn-slice-1": {Name: "s1", ForKueue: true}}}},
		{name: "all Ready: the check passes",
			o: Observed{State: Pending, QuotaReserved: true, Wants: twoSlices(),
				Slices: map[string]Slice{"dyn-slice-0": ready("s0", true), "dyn-slice-1": ready("s1", true)}},
			state: Ready, saying: "Slices Ready: s0 (x), s1 (x)"},
		{name: "hosts that make no slice: retry, nothing formed",
			o: Observed{State: Pending, QuotaReserved: true, Nodes: fleet(),
				Wants: []Want{twoSlices()[0], {Job: "dyn-slice-1", Topology: tpu.Topology{4, 4, 8}, Hosts: append(cube(1)[:8], cube(3)[:8]...)}}},
			state: Retry, saying: "the hosts Kueue chose for Job dyn-slice-1 make no 4x4x8 slice"},
		{name: "a Slice failed while pending: retry",
			o: Observed{State: Pending, QuotaReserved: true, Wants: twoSlices(),
				Slices: map[string]Slice{"dyn-slice-0": {Name: "s0", Failed: true, ForKueue: true, Message: "host h1 NotReady"}}},
			state: Retry, saying: "Slice s0 failed: host h1 NotReady"},
		{name: "admitted, a Slice it formed fails: retry, Kueue requeues",
			o: Observed{State: Ready, QuotaReserved: true, Wants: twoSlices(),
				Slices: map[string]Slice{"dyn-slice-0": ready("s0", true), "dyn-slice-1": {Name: "s1", Failed: true, ForKueue: true, Message: "partition c1: host c1-h3 NotReady"}}},
			state: Retry, saying: "Slice s1 failed: partition c1: host c1-h3 NotReady; Kueue requeues"},
		{name: "admitted, a Slice the JobSet formed itself fails: the JobSet forms it again",
			o: Observed{State: Ready, QuotaReserved: true, Wants: twoSlices(),
				Slices: map[string]Slice{"dyn-slice-1": {Name: "s1", Failed: true}}}},
		{name: "evicted: the Slices formed for it go, the JobSet's own stay",
			o:      Observed{State: Pending, Wants: twoSlices(), Slices: map[string]Slice{"dyn-slice-0": ready("s0", true), "dyn-slice-1": ready("s1", true), "other": ready("s9", false)}},
			delete: []string{"s0", "s1"}},
		{name: "no topology from Kueue: the check passes, the JobSet forms its Slices when it starts",
			o:     Observed{State: Pending, QuotaReserved: true, Wants: []Want{{Job: "dyn-slice-0", Topology: tpu.Topology{4, 4, 8}}}},
			state: Ready, saying: "no topology-aware scheduling"},
		{name: "no dynamic slice: the check passes",
			o:     Observed{State: Pending, QuotaReserved: true},
			state: Ready, saying: "asks for no dynamic slice"},
		{name: "no dynamic slice, passed already: nothing to write",
			o: Observed{State: Ready, QuotaReserved: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.o)
			form := map[string][]string{}
			for _, f := range d.Form {
				form[f.Want.Name] = f.Cubes
			}
			if len(form) == 0 {
				form = nil
			}
			if !reflect.DeepEqual(form, tc.form) || !reflect.DeepEqual(d.Delete, tc.delete) {
				t.Fatalf("form %v delete %v, want %v %v", form, d.Delete, tc.form, tc.delete)
			}
			if d.State != tc.state || !strings.Contains(d.Message, tc.saying) {
				t.Fatalf("state %q %q, want %q saying %q", d.State, d.Message, tc.state, tc.saying)
			}
		})
	}
}
