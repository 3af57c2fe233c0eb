package tpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Shape is one slice: a generation at a topology on a machine type.
type Shape struct {
	Generation   Generation
	Accelerator  string // gke-tpu-accelerator label value
	Topology     Topology
	MachineType  string
	ChipsPerHost int
	Hosts        int
}

// NewShape resolves an accelerator label value and topology into a slice
// shape. machineType may be empty: the catalogue then picks the machine type
// GKE would use; when given it must agree with the accelerator and topology.
func NewShape(accelerator, topology, machineType string) (Shape, error) {
	g, err := ForAccelerator(accelerator)
	if err != nil {
		return Shape{}, err
	}
	t, err := ParseTopology(topology)
	if err != nil {
		return Shape{}, err
	}
	if err := g.validTopology(t); err != nil {
		return Shape{}, err
	}
	chipsPerHost := g.chipsPerHost(t)
	if machineType != "" {
		mg, chips, err := ForMachineType(machineType)
		if err != nil {
			return Shape{}, err
		}
		if mg.Name != g.Name {
			return Shape{}, fmt.Errorf("machine type %q is %s, but accelerator %q is %s: use %s",
				machineType, mg.Name, accelerator, g.Name, g.MachineTypes[chipsPerHost])
		}
		if err := g.fits(t, chips); err != nil {
			return Shape{}, fmt.Errorf("machine type %q: %w", machineType, err)
		}
		chipsPerHost = chips
	}
	want, ok := g.MachineTypes[chipsPerHost]
	if !ok {
		return Shape{}, fmt.Errorf("%s has no machine type with %d chips per host for topology %s", g.Name, chipsPerHost, t)
	}
	return Shape{
		Generation: g, Accelerator: accelerator, Topology: t, MachineType: want,
		ChipsPerHost: chipsPerHost, Hosts: t.Chips() / chipsPerHost,
	}, nil
}

// ShapeForType resolves an accelerator type name such as v4-16 or
// v5litepod-16 (the xpk --tpu-type form) into the smallest matching shape.
func ShapeForType(tpuType string) (Shape, error) {
	i := strings.LastIndex(tpuType, "-")
	if i < 0 {
		return Shape{}, fmt.Errorf("TPU type %q: want <generation>-<cores> or <generation>-<topology>, for example v4-16, v5litepod-16 or tpu7x-4x4x8", tpuType)
	}
	g, err := ForName(tpuType[:i])
	if err != nil {
		return Shape{}, fmt.Errorf("TPU type %q: %w", tpuType, err)
	}
	if topology := tpuType[i+1:]; strings.Contains(topology, "x") {
		// <generation>-<topology>, e.g. tpu7x-4x4x8: any valid topology.
		s, err := NewShape(g.PrimaryAccelerator(), topology, "")
		if err != nil {
			return Shape{}, fmt.Errorf("TPU type %q: %w", tpuType, err)
		}
		return s, nil
	}
	n, err := strconv.Atoi(tpuType[i+1:])
	if err != nil || n < 1 {
		return Shape{}, fmt.Errorf("TPU type %q: %q is not a positive core count", tpuType, tpuType[i+1:])
	}
	for _, topo := range g.Topologies() {
		s, err := NewShape(g.PrimaryAccelerator(), topo, "")
		if err == nil && s.Chips()*g.CoresPerChip == n {
			return s, nil
		}
	}
	return Shape{}, fmt.Errorf("TPU type %q: no %s topology has that size (known: %s)", tpuType, g.Name, strings.Join(g.typeNames(), ", "))
}

func (g Generation) typeNames() []string {
	var out []string
	for _, topo := range g.Topologies() {
		if s, err := NewShape(g.PrimaryAccelerator(), topo, ""); err == nil {
			out = append(out, s.AcceleratorType())
		}
	}
	return out
}

// chipsPerHost is GKE's default: a single-host topology puts every chip on
// its one VM; multi-host slices are built from 4-chip VMs.
func (g Generation) chipsPerHost(t Topology) int {
	if slices.Contains(g.SingleHost, t.String()) {
		return t.Chips()
	}
	return MultiHostChipsPerHost
}

// fits checks that VMs of chipsPerHost chips can build topology t: either
// one VM holds the whole single-host topology, or 4-chip VMs tile it.
func (g Generation) fits(t Topology, chipsPerHost int) error {
	if chipsPerHost == t.Chips() && slices.Contains(g.SingleHost, t.String()) {
		return nil
	}
	if chipsPerHost == MultiHostChipsPerHost && t.Chips()%MultiHostChipsPerHost == 0 {
		return nil
	}
	return fmt.Errorf("%d chips per host cannot build topology %s (%d chips)", chipsPerHost, t, t.Chips())
}

// MultiHost reports whether the slice spans more than one VM; only such
// slices may form a multislice.
func (s Shape) MultiHost() bool { return s.Hosts > 1 }

// Chips is the total chip count of the slice.
func (s Shape) Chips() int { return s.Topology.Chips() }

// AcceleratorType is the Cloud TPU name of the slice, e.g. v4-16.
func (s Shape) AcceleratorType() string {
	return fmt.Sprintf("%s-%d", s.Generation.TypePrefix, s.Chips()*s.Generation.CoresPerChip)
}

// ChipsPerHostBounds is TPU_CHIPS_PER_HOST_BOUNDS, e.g. "2,2,1".
func (s Shape) ChipsPerHostBounds() string { return joinInts(chipBounds(s.ChipsPerHost)) }

// HostBounds is TPU_HOST_BOUNDS: topology divided by chips-per-host bounds.
func (s Shape) HostBounds() string {
	t, c := s.Topology.padded(), chipBounds(s.ChipsPerHost)
	var out [3]int
	for i := range t {
		out[i] = max(1, t[i]/c[i])
	}
	return joinInts(out)
}

// Wrap is TPU_TOPOLOGY_WRAP, e.g. "false,false,false".
func (s Shape) Wrap() string {
	t := s.Topology.padded()
	var w [3]bool
	if s.Generation.WrapPerDim {
		for i := range t {
			w[i] = t[i] == 16
		}
	} else {
		cube := t[0] >= 4 && t[1] >= 4 && t[2] >= 4
		w = [3]bool{cube, cube, cube}
	}
	return fmt.Sprintf("%t,%t,%t", w[0], w[1], w[2])
}

func chipBounds(chipsPerHost int) [3]int {
	switch chipsPerHost {
	case 1:
		return [3]int{1, 1, 1}
	case 2:
		return [3]int{1, 2, 1}
	case 8:
		return [3]int{2, 4, 1}
	default:
		return [3]int{2, 2, 1}
	}
}

func joinInts(v [3]int) string { return fmt.Sprintf("%d,%d,%d", v[0], v[1], v[2]) }

// Dynamic slicing (tpu7x): slices formed at schedule time from sub-blocks.
const (
	// CubeDim is the edge of a tpu7x sub-block: a 4x4x4 cube of 16 VMs.
	CubeDim = 4
	// CubeChips are a cube's chips, CubeTopology its topology label.
	CubeChips    = CubeDim * CubeDim * CubeDim
	CubeTopology = "4x4x4"
	// MaxDynamicChips bounds a super-slice: one block's chips.
	MaxDynamicChips = 9216
)

// SubSlices are the shapes a tpu7x cube is cut into (sub-slicing).
var SubSlices = []string{"2x2x4", "2x4x4"}

// DynamicSlice resolves the shape a pod asks for with GKE's slice-topology
// annotation: a super-slice stitched from whole cubes (every dimension a
// multiple of 4, at most MaxDynamicChips chips) or a sub-slice cut from
// one (SubSlices). sub says which.
func DynamicSlice(topology string) (s Shape, sub bool, err error) {
	valid := fmt.Sprintf("a tpu7x slice is stitched from 4x4x4 cubes (each dimension a multiple of 4, at most %d chips, e.g. 4x4x8) or cut from one (%s)",
		MaxDynamicChips, strings.Join(SubSlices, ", "))
	t, err := ParseTopology(topology)
	if err != nil {
		return Shape{}, false, fmt.Errorf("%w: %s", err, valid)
	}
	sorted := slices.Clone([]int(t))
	slices.Sort(sorted)
	sub = slices.Contains(SubSlices, joinDims(sorted))
	whole := len(t) == 3
	for _, d := range t {
		whole = whole && d%CubeDim == 0
	}
	if !sub && (!whole || t.Chips() > MaxDynamicChips) {
		return Shape{}, false, fmt.Errorf("%s cannot be formed: %s", topology, valid)
	}
	s, err = NewShape("tpu7x", topology, "")
	return s, sub, err
}

func joinDims(d []int) string {
	parts := make([]string, len(d))
	for i, v := range d {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, "x")
}
