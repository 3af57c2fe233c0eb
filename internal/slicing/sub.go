package slicing

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/tpu"
)

// Sub-slicing: a cube's 16 hosts are a 2x2x4 grid (4 chips each, 2x2x1);
// a quarter is one column of it along z (hosts x, y fixed: 2x2x4 chips),
// a half two quarters side by side along y (2x4x4 chips). Cutting a cube
// only into these keeps every sub-slice a box of hosts, and two sub-slices
// never share a host.

// HostPos is host i's place in its cube's 2x2x4 grid of hosts (the
// order of a sub-block's node names, gke-<pool>-<i>).
func HostPos(i int) Pos { return Pos{i % 2, i / 2 % 2, i / 4} }

// SubPartitions are host i's sub-slice partitions of its cube, as node
// labels: its half (2x4x4) and its quarter (2x2x4), each named
// <cube>-<part>, so that a partition id is unique in the cluster.
func SubPartitions(cube string, i int) map[string]string {
	p := HostPos(i)
	return map[string]string{
		gke.PartitionHalfLabel:    fmt.Sprintf("%s-h%d", cube, p[0]),
		gke.PartitionQuarterLabel: fmt.Sprintf("%s-q%d", cube, p[0]+2*p[1]),
	}
}

// SubQuarters is how many quarters a sub-slice topology takes (2x2x4: 1,
// 2x4x4: 2); 0 when it is not a sub-slice.
func SubQuarters(t tpu.Topology) int {
	sorted := slices.Clone(t)
	slices.Sort(sorted)
	switch sorted.String() {
	case "2x2x4":
		return 1
	case "2x4x4":
		return 2
	}
	return 0
}

// partMasks are the quarter sets a sub-slice of n quarters may take: one
// column, or two columns of one x (quarters x and x+2).
func partMasks(n int) []uint8 {
	if n == 1 {
		return []uint8{1, 2, 4, 8}
	}
	return []uint8{0b0101, 0b1010}
}

// QuarterHosts are the host positions of the quarters in mask, as node
// label values, in order.
func QuarterHosts(mask uint8) []string {
	var out []string
	for z := range 4 {
		for q := range 4 {
			if mask&(1<<q) != 0 {
				out = append(out, Pos{q % 2, q / 2, z}.String())
			}
		}
	}
	return out
}

// bestPart picks a free cube for a sub-slice of n quarters: one already
// cut (so whole cubes stay whole for super-slices), the fullest first,
// then the first by block and position; and its first free quarters.
func bestPart(blocks []*grid, n int) (*Cube, uint8, bool) {
	var best *Cube
	var bestMask uint8
	for _, g := range blocks {
		for _, c := range g.sortedCubes() {
			if !c.Free {
				continue
			}
			for _, m := range partMasks(n) {
				if c.Quarters&m != 0 {
					continue
				}
				if best == nil || bits.OnesCount8(c.Quarters) > bits.OnesCount8(best.Quarters) {
					best, bestMask = c, m
				}
				break
			}
		}
	}
	return best, bestMask, best != nil
}

func (g *grid) sortedCubes() []*Cube {
	out := make([]*Cube, 0, len(g.cubes))
	for _, c := range g.cubes {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Cube) int { return Less(*a, *b) })
	return out
}

func whyNoPart(w Want, n int, blocks []*grid, gang int) string {
	msg := fmt.Sprintf("sub-slice %s (%s) needs %d free quarter(s) of one healthy 4x4x4 cube", w.Name, w.Topology, n)
	if gang > 1 {
		msg += fmt.Sprintf(" (with the other %d slices of its JobSet, all at once)", gang-1)
	}
	var parts []string
	for _, g := range blocks {
		free := 0
		for _, c := range g.cubes {
			if c.Free {
				free += 4 - bits.OnesCount8(c.Quarters)
			}
		}
		parts = append(parts, fmt.Sprintf("block %s: %d free quarters", g.name, free))
	}
	if len(parts) == 0 {
		return msg + "; the cluster has no sub-block nodes: provision tpu7x sub-blocks"
	}
	return msg + ", and none has them now: " + strings.Join(parts, "; ")
}

// FormatQuarters writes a quarter mask as QuartersAnnotation's value.
func FormatQuarters(mask uint8) string {
	var parts []string
	for q := range 4 {
		if mask&(1<<q) != 0 {
			parts = append(parts, strconv.Itoa(q))
		}
	}
	return strings.Join(parts, ",")
}

// QuartersOf are the quarters of its one partition a sub-slice's Slice
// holds (0: a super-slice, whole partitions).
func QuartersOf(s *slicev1beta1.Slice) uint8 {
	return ParseQuarters(s.Annotations[slicev1beta1.QuartersAnnotation])
}

// ParseQuarters reads QuartersAnnotation's value (0: none or invalid).
func ParseQuarters(s string) uint8 {
	var mask uint8
	for _, p := range strings.Split(s, ",") {
		q, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || q < 0 || q > 3 {
			return 0
		}
		mask |= 1 << q
	}
	return mask
}
