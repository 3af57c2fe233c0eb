package slicing

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/gke"
)

// cubeNodes are the hosts of cubes c0..c<n-1> of block b0 (c9 is in b1),
// named c<i>-h<j> at HostPos(j).
func cubeNodes(n int) map[string]Host {
	out := map[string]Host{}
	for c := range n {
		for j := range cubeHosts {
			out[fmt.Sprintf("c%d-h%d", c, j)] = Host{Cube: fmt.Sprintf("c%d", c), Block: "b0", Pos: HostPos(j)}
		}
	}
	for j := range cubeHosts {
		out[fmt.Sprintf("c9-h%d", j)] = Host{Cube: "c9", Block: "b1", Pos: HostPos(j)}
	}
	return out
}

// hostsOf are the named hosts of cube c: js are host indexes.
func hostsOf(c int, js ...int) []string {
	var out []string
	for _, j := range js {
		out = append(out, fmt.Sprintf("c%d-h%d", c, j))
	}
	return out
}

func all(c int) []string {
	var js []int
	for j := range cubeHosts {
		js = append(js, j)
	}
	return hostsOf(c, js...)
}

func TestFromHosts(t *testing.T) {
	nodes := cubeNodes(4)
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		topology string
		hosts    []string
		cubes    []string
		quarters uint8
		err      string
	}{
		{name: "one whole cube", topology: "4x4x4", hosts: all(2), cubes: []string{"c2"}},
		{name: "two whole cubes, in Kueue's order", topology: "4x4x8", hosts: join(all(3), all(0)), cubes: []string{"c3", "c0"}},
		{name: "too few cubes", topology: "4x8x8", hosts: join(all(0), all(1)), err: "takes 4 whole cubes; the hosts are on 2"},
		{name: "part of a cube", topology: "4x4x8", hosts: join(all(0), hostsOf(1, 0, 1, 2, 3, 4, 5, 6, 7), hostsOf(2, 0, 1, 2, 3, 4, 5, 6, 7)),
			err: "takes 2 whole cubes; the hosts are on 3"},
		{name: "cube short of hosts", topology: "4x4x4", hosts: hostsOf(0, 0, 1, 2), err: "3 of cube c0's 16 hosts"},
		{name: "two blocks", topology: "4x4x8", hosts: join(all(0), all(9)), err: "span blocks b0 and b1"},
		{name: "unknown host", topology: "4x4x4", hosts: []string{"cpu-0"}, err: "cpu-0 is not a host of a tpu7x sub-block"},
		{name: "a quarter", topology: "2x2x4", hosts: hostsOf(1, 1, 5, 9, 13), cubes: []string{"c1"}, quarters: 0b0010},
		{name: "a half", topology: "2x4x4", hosts: hostsOf(1, 0, 4, 8, 12, 2, 6, 10, 14), cubes: []string{"c1"}, quarters: 0b0101},
		{name: "a half of two x", topology: "2x4x4", hosts: hostsOf(1, 0, 4, 8, 12, 1, 5, 9, 13), err: "the hosts make quarters 0,1"},
		{name: "hosts not a column", topology: "2x2x4", hosts: hostsOf(1, 0, 1, 2, 3), err: "takes whole quarters"},
		{name: "sub-slice over two cubes", topology: "2x2x4", hosts: join(hostsOf(1, 0, 4), hostsOf(2, 8, 12)), err: "cut from one cube"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cubes, quarters, err := FromHosts(topo(tc.topology), tc.hosts, nodes)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cubes, tc.cubes) || quarters != tc.quarters {
				t.Errorf("cubes %v quarters %b, want %v %b", cubes, quarters, tc.cubes, tc.quarters)
			}
		})
	}
}

func TestAskKueueForCubes(t *testing.T) {
	tmpl := func(ann map[string]string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	super := tmpl(map[string]string{gke.SliceTopologyAnnotation: "4x4x8"})
	if !AskKueueForCubes(super) {
		t.Fatal("a super-slicing template was left alone")
	}
	want := map[string]string{gke.SliceTopologyAnnotation: "4x4x8", gke.PodSetRequiredTopologyAnnotation: gke.TopologyBlockLabel,
		gke.PodSetSliceRequiredTopologyAnnotation: gke.PartitionCubeLabel, gke.PodSetSliceSizeAnnotation: "16"}
	if !reflect.DeepEqual(super.Annotations, want) {
		t.Errorf("annotations %v, want %v", super.Annotations, want)
	}
	sub := tmpl(map[string]string{gke.SliceTopologyAnnotation: "2x4x4", gke.PodSetRequiredTopologyAnnotation: gke.PartitionCubeLabel})
	if !AskKueueForCubes(sub) || sub.Annotations[gke.PodSetSliceRequiredTopologyAnnotation] != gke.PartitionHalfLabel ||
		sub.Annotations[gke.PodSetSliceSizeAnnotation] != "8" || sub.Annotations[gke.PodSetRequiredTopologyAnnotation] != gke.PartitionCubeLabel {
		t.Errorf("a 2x4x4 sub-slice (xpk's cube kept): %v, want each slice on a half of 8 hosts", sub.Annotations)
	}
	for name, ann := range map[string]map[string]string{
		"user's own slicing": {gke.SliceTopologyAnnotation: "2x2x4", gke.PodSetSliceRequiredTopologyAnnotation: gke.PartitionCubeLabel, gke.PodSetSliceSizeAnnotation: "4"},
		"user's own request": {gke.SliceTopologyAnnotation: "4x4x8", "kueue.x-k8s.io/podset-preferred-topology": gke.TopologyBlockLabel},
		"no dynamic slice":   {},
		"bad topology":       {gke.SliceTopologyAnnotation: "4x4"},
	} {
		if before := len(ann); AskKueueForCubes(tmpl(ann)) || len(ann) != before {
			t.Errorf("%s: changed to %v", name, ann)
		}
	}
}
