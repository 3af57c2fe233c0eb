package tpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Topology is a chip grid such as 2x2x2 (3-D generations) or 4x4 (2-D).
type Topology []int

// ParseTopology reads "AxB" or "AxBxC".
func ParseTopology(s string) (Topology, error) {
	parts := strings.Split(s, "x")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, fmt.Errorf("topology %q: want AxB or AxBxC, for example 2x2x2 or 4x4", s)
	}
	t := make(Topology, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("topology %q: %q is not a positive integer", s, p)
		}
		t[i] = n
	}
	return t, nil
}

// String formats the topology as GKE labels it.
func (t Topology) String() string {
	parts := make([]string, len(t))
	for i, n := range t {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, "x")
}

// Chips is the number of chips in the grid.
func (t Topology) Chips() int {
	n := 1
	for _, d := range t {
		n *= d
	}
	return n
}

// padded returns the topology as three dimensions (2-D gets a trailing 1).
func (t Topology) padded() [3]int {
	out := [3]int{1, 1, 1}
	copy(out[:], t)
	return out
}

// validTopology checks a topology against a generation's rules.
func (g Generation) validTopology(t Topology) error {
	if len(t) != g.Dims {
		return fmt.Errorf("%s topologies have %d dimensions, %q has %d", g.Name, g.Dims, t, len(t))
	}
	s := t.String()
	if slices.Contains(g.SingleHost, s) || slices.Contains(g.MultiHost, s) {
		return nil
	}
	if g.Dims == 2 {
		return fmt.Errorf("%s does not offer topology %s: use one of %s", g.Name, s,
			strings.Join(append(slices.Clone(g.SingleHost), g.MultiHost...), ", "))
	}
	// 3-D multi-host rule: dimensions in non-decreasing order, each 2 or a
	// multiple of 4, and more than one host's worth of chips.
	if t.Chips() <= MultiHostChipsPerHost {
		return fmt.Errorf("%s does not offer topology %s: single-host shapes are %s", g.Name, s, strings.Join(g.SingleHost, ", "))
	}
	if !slices.IsSorted(t) {
		sorted := slices.Clone(t)
		slices.Sort(sorted)
		return fmt.Errorf("%s topology %s: write the dimensions in non-decreasing order, as %s", g.Name, s, sorted)
	}
	for _, d := range t {
		if d != 2 && d%4 != 0 {
			return fmt.Errorf("%s topology %s: each dimension must be 2 or a multiple of 4 (got %d)", g.Name, s, d)
		}
	}
	return nil
}

// Topologies lists example valid topologies of a generation, smallest first:
// every 2-D shape, and the common 3-D ones up to 4x4x8.
func (g Generation) Topologies() []string {
	if g.Dims == 2 {
		return append(slices.Clone(g.SingleHost), g.MultiHost...)
	}
	return append(slices.Clone(g.SingleHost), "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8")
}
