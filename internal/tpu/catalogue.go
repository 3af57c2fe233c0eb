// Package tpu is the one TPU catalogue of Multislice: generations, GKE label
// values, machine types, valid topologies and the host-count arithmetic that
// turns an accelerator and a topology into a slice shape. Everything here is a
// pure function of its inputs; every other package asks this one.
package tpu

import (
	"fmt"
	"slices"
	"strings"
)

// Generation describes one TPU generation as GKE exposes it.
type Generation struct {
	// Name is the short generation name users type: v4, v5e, v5p, v6e, tpu7x.
	Name string
	// Accelerators are the values of cloud.google.com/gke-tpu-accelerator.
	Accelerators []string
	// TypePrefix starts accelerator type names (v4-16, v5litepod-16).
	TypePrefix string
	// CoresPerChip: accelerator type names count TensorCores for most
	// generations and chips for v5e and v6e.
	CoresPerChip int
	// Dims is 2 or 3: the number of dimensions of a topology.
	Dims int
	// MachineTypes by chips per host.
	MachineTypes map[int]string
	// SingleHost lists topologies served by one host.
	SingleHost []string
	// MultiHost lists the explicit multi-host topologies for 2-D
	// generations; 3-D generations follow a rule instead (see validTopology).
	MultiHost []string
	// WrapPerDim: v5e and v6e wrap a dimension only when it is 16 long; the
	// others wrap all dimensions once the slice is a full cube or larger.
	WrapPerDim bool
}

// MultiHostChipsPerHost is the chip count of every multi-host TPU VM.
const MultiHostChipsPerHost = 4

var generations = []Generation{
	{
		Name: "v3", Accelerators: []string{"tpu-v3-slice", "tpu-v3-device"}, TypePrefix: "v3",
		CoresPerChip: 2, Dims: 2,
		MachineTypes: map[int]string{4: "ct3p-hightpu-4t"},
		SingleHost:   []string{"2x2"},
		MultiHost:    []string{"4x4", "4x8", "8x8", "8x16", "16x16", "16x32", "32x32"},
	},
	{
		Name: "v4", Accelerators: []string{"tpu-v4-podslice"}, TypePrefix: "v4",
		CoresPerChip: 2, Dims: 3,
		MachineTypes: map[int]string{4: "ct4p-hightpu-4t"},
		SingleHost:   []string{"2x2x1"},
	},
	{
		Name: "v5e", Accelerators: []string{"tpu-v5-lite-podslice", "tpu-v5-lite-device"}, TypePrefix: "v5litepod",
		CoresPerChip: 1, Dims: 2,
		MachineTypes: map[int]string{1: "ct5lp-hightpu-1t", 4: "ct5lp-hightpu-4t", 8: "ct5lp-hightpu-8t"},
		SingleHost:   []string{"1x1", "2x2", "2x4"},
		MultiHost:    []string{"4x4", "4x8", "8x8", "8x16", "16x16"},
		WrapPerDim:   true,
	},
	{
		Name: "v5p", Accelerators: []string{"tpu-v5p-slice"}, TypePrefix: "v5p",
		CoresPerChip: 2, Dims: 3,
		MachineTypes: map[int]string{4: "ct5p-hightpu-4t"},
		SingleHost:   []string{"2x2x1"},
	},
	{
		Name: "v6e", Accelerators: []string{"tpu-v6e-slice"}, TypePrefix: "v6e",
		CoresPerChip: 1, Dims: 2,
		MachineTypes: map[int]string{1: "ct6e-standard-1t", 4: "ct6e-standard-4t", 8: "ct6e-standard-8t"},
		SingleHost:   []string{"1x1", "2x2", "2x4"},
		MultiHost:    []string{"4x4", "4x8", "8x8", "8x16", "16x16"},
		WrapPerDim:   true,
	},
	{
		Name: "tpu7x", Accelerators: []string{"tpu7x"}, TypePrefix: "tpu7x",
		CoresPerChip: 2, Dims: 3,
		MachineTypes: map[int]string{1: "tpu7x-standard-1t", 4: "tpu7x-standard-4t"},
		SingleHost:   []string{"1x1x1", "2x2x1"},
	},
}

// Generations returns the catalogue, oldest first.
func Generations() []Generation { return slices.Clone(generations) }

// Accelerators returns every known cloud.google.com/gke-tpu-accelerator value.
func Accelerators() []string {
	var out []string
	for _, g := range generations {
		out = append(out, g.Accelerators...)
	}
	return out
}

// ForAccelerator finds the generation of a gke-tpu-accelerator label value.
func ForAccelerator(accelerator string) (Generation, error) {
	for _, g := range generations {
		if slices.Contains(g.Accelerators, accelerator) {
			return g, nil
		}
	}
	return Generation{}, fmt.Errorf("unknown TPU accelerator %q: use one of %s",
		accelerator, strings.Join(Accelerators(), ", "))
}

// ForName finds a generation by its short name (v4, v5e, v5litepod, v5p, v6e, tpu7x).
func ForName(name string) (Generation, error) {
	for _, g := range generations {
		if g.Name == name || g.TypePrefix == name {
			return g, nil
		}
	}
	var names []string
	for _, g := range generations {
		names = append(names, g.Name)
	}
	return Generation{}, fmt.Errorf("unknown TPU generation %q: use one of %s", name, strings.Join(names, ", "))
}

// ForMachineType finds the generation and chips per host of a machine type.
func ForMachineType(machineType string) (Generation, int, error) {
	for _, g := range generations {
		for chips, mt := range g.MachineTypes {
			if mt == machineType {
				return g, chips, nil
			}
		}
	}
	return Generation{}, 0, fmt.Errorf("unknown TPU machine type %q (for example ct4p-hightpu-4t, ct5lp-hightpu-4t, ct5p-hightpu-4t, ct6e-standard-4t, tpu7x-standard-4t)", machineType)
}

// PrimaryAccelerator is the label value GKE uses for new node pools.
func (g Generation) PrimaryAccelerator() string { return g.Accelerators[0] }
