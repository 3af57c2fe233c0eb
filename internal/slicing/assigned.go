package slicing

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/tpu"
)

// Under Kueue with topology-aware scheduling (TAS), Kueue chooses the
// hosts of a workload's pods when it reserves quota, before its admission
// checks run, and gives them to the pods by rank (a JobSet's pod of Job j
// and completion index i has rank j*parallelism + i). A Slice formed for
// such a Job must be made of exactly the hosts Kueue gave it: FromHosts
// reads which cubes (and, for a sub-slice, which quarters of its cube)
// those are.

// Host is one node as FromHosts sees it: its cube, block and place in
// its cube's 2x2x4 grid of hosts.
type Host struct {
	Cube, Block string
	Pos         Pos
}

// cubeHosts are a 4x4x4 cube's hosts (4 chips each); a quarter has 4.
const cubeHosts = tpu.CubeChips / tpu.MultiHostChipsPerHost

// FromHosts is the Slice of topology t made of hosts (host names, in
// Kueue's rank order), each looked up in nodes: its cubes in the order
// the hosts first name them, and for a sub-slice its quarters; or why
// the hosts do not make one. A super-slice takes whole cubes of one
// block, any of them: GKE's optical circuit switches stitch any cubes of
// a block, and so does a Slice formed here from Kueue's choice (the
// manager's own formation prefers boxes of adjacent cubes, which keep
// the largest shapes formable). A sub-slice takes whole quarters (or a
// half) of one cube.
func FromHosts(t tpu.Topology, hosts []string, nodes map[string]Host) (cubes []string, quarters uint8, err error) {
	perCube := map[string][]string{}
	perQuarter := map[string]map[int]int{}
	block := ""
	for _, h := range hosts {
		n, ok := nodes[h]
		if !ok || n.Cube == "" {
			return nil, 0, fmt.Errorf("host %s is not a host of a tpu7x sub-block", h)
		}
		if block == "" {
			block = n.Block
		} else if n.Block != block {
			return nil, 0, fmt.Errorf("hosts span blocks %s and %s: a slice is stitched within one block", block, n.Block)
		}
		if _, seen := perCube[n.Cube]; !seen {
			cubes = append(cubes, n.Cube)
			perQuarter[n.Cube] = map[int]int{}
		}
		perCube[n.Cube] = append(perCube[n.Cube], h)
		perQuarter[n.Cube][n.Pos[0]+2*n.Pos[1]]++
	}
	if n := SubQuarters(t); n > 0 {
		return subFromHosts(t, n, cubes, perQuarter)
	}
	want := t.Chips() / tpu.CubeChips
	if len(cubes) != want {
		return nil, 0, fmt.Errorf("topology %s takes %d whole cubes; the hosts are on %d (%s)", t, want, len(cubes), strings.Join(cubes, ", "))
	}
	for _, c := range cubes {
		if got := len(perCube[c]); got != cubeHosts {
			return nil, 0, fmt.Errorf("topology %s takes whole cubes; %d of cube %s's %d hosts were chosen", t, got, c, cubeHosts)
		}
	}
	return cubes, 0, nil
}

// subFromHosts: a sub-slice of n quarters takes whole quarters of one
// cube, one column or two columns of one x.
func subFromHosts(t tpu.Topology, n int, cubes []string, perQuarter map[string]map[int]int) ([]string, uint8, error) {
	if len(cubes) != 1 {
		return nil, 0, fmt.Errorf("sub-slice %s is cut from one cube; the hosts are on %d (%s)", t, len(cubes), strings.Join(cubes, ", "))
	}
	var mask uint8
	for q, got := range perQuarter[cubes[0]] {
		if got != cubeHosts/4 {
			return nil, 0, fmt.Errorf("sub-slice %s takes whole quarters (columns of 4 hosts) of cube %s; %d hosts of quarter %d were chosen", t, cubes[0], got, q)
		}
		mask |= 1 << q
	}
	if !slices.Contains(partMasks(n), mask) || bits.OnesCount8(mask) != n {
		return nil, 0, fmt.Errorf("sub-slice %s takes %d side-by-side quarters of cube %s; the hosts make quarters %s", t, n, cubes[0], FormatQuarters(mask))
	}
	return cubes, mask, nil
}

// AskKueueForCubes adds to a dynamic-slicing pod template, for Kueue's
// topology-aware scheduling, what makes Kueue choose hosts a Slice can be
// formed from: for a super-slice every pod in one block and each 16 pods
// on one whole cube; for a sub-slice each slice's pods on one quarter (or
// half) of a cube (xpk puts the pod set in one cube itself). xpk's
// JobSets carry neither; GKE's slice controller adds defaults of its own
// the same way. A template that already says how Kueue slices it, or
// (super-slice) names any topology for Kueue, is left as it is. It says
// whether it changed t.
func AskKueueForCubes(t *corev1.PodTemplateSpec) bool {
	shape, err := tpu.ParseTopology(t.Annotations[gke.SliceTopologyAnnotation])
	if err != nil {
		return false
	}
	set := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := t.Annotations[k]; ok {
				return true
			}
		}
		return false
	}
	if set(gke.PodSetSliceRequiredTopologyAnnotation, gke.PodSetSliceSizeAnnotation) {
		return false
	}
	switch n := SubQuarters(shape); {
	case n == 1 || n == 2:
		level := map[int]string{1: gke.PartitionQuarterLabel, 2: gke.PartitionHalfLabel}[n]
		t.Annotations[gke.PodSetSliceRequiredTopologyAnnotation] = level
		t.Annotations[gke.PodSetSliceSizeAnnotation] = strconv.Itoa(n * cubeHosts / 4)
		return true
	case set(gke.PodSetRequiredTopologyAnnotation, podSetPreferredTopologyAnnotation, podSetUnconstrainedTopologyAnnotation):
		return false
	}
	if _, err := CubeDims(shape); err != nil {
		return false // a shape admission refuses
	}
	t.Annotations[gke.PodSetRequiredTopologyAnnotation] = gke.TopologyBlockLabel
	t.Annotations[gke.PodSetSliceRequiredTopologyAnnotation] = gke.PartitionCubeLabel
	t.Annotations[gke.PodSetSliceSizeAnnotation] = strconv.Itoa(cubeHosts)
	return true
}

// Kueue's other ways of asking for a topology: a template with one is
// left alone.
const (
	podSetPreferredTopologyAnnotation     = "kueue.x-k8s.io/podset-preferred-topology"
	podSetUnconstrainedTopologyAnnotation = "kueue.x-k8s.io/podset-unconstrained-topology"
)
