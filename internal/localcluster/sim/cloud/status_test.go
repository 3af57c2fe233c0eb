package cloud

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/testobj"
)

func hosts(pool string, n int, edits ...func(*corev1.Node)) []corev1.Node {
	var out []corev1.Node
	for i := range n {
		out = append(out, testobj.Node(pool+"-"+string(rune('a'+i)), append([]func(*corev1.Node){testobj.TPUHost(pool, "2x2x2", "g")}, edits...)...))
	}
	return out
}

func TestSummarize(t *testing.T) {
	pool := func(name string) fleet.Resolved {
		r, err := fleet.Resolve(fleet.Pool{Name: name, Accelerator: "tpu-v4-podslice", Topology: "2x2x2",
			Labels: map[string]string{gke.MultisliceGroupLabel: "g", gke.MultisliceGroupSizeLabel: "2"}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pools := []fleet.Resolved{pool("np-a"), pool("np-b"), pool("np-c")}
	nodes := append(append(hosts("np-a", 2), hosts("np-b", 2)...), hosts("np-c", 1, testobj.NotReady)...)
	statuses, groups, err := Summarize(pools, nodes, fleet.GroupLabels{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range statuses {
		got = append(got, s.Name+" "+s.Problem)
	}
	if want := "np-a |np-b |np-c 1 of its 2 hosts are gone"; strings.Join(got, "|") != want {
		t.Errorf("pools %q, want %q", strings.Join(got, "|"), want)
	}
	if statuses[2].Present != 1 || statuses[2].Ready != 0 {
		t.Errorf("np-c present %d ready %d", statuses[2].Present, statuses[2].Ready)
	}
	if len(groups) != 1 || groups[0].HealthySlice != 2 || !groups[0].Complete() {
		t.Errorf("groups %+v", groups)
	}
}

func TestGroupHealth(t *testing.T) {
	cases := []struct {
		healthy, size int
		want          string
	}{
		{5, 4, "4 slices + 1 spare healthy"},
		{6, 4, "4 slices + 2 spare healthy"},
		{4, 4, "4 of 4 slices healthy"},
		{3, 4, "3 of 4 slices healthy"},
		{0, 2, "0 of 2 slices healthy"},
	}
	for _, c := range cases {
		if got := (GroupStatus{HealthySlice: c.healthy, Size: c.size}).Health(); got != c.want {
			t.Errorf("%d healthy of %d: %q, want %q", c.healthy, c.size, got, c.want)
		}
	}
}
