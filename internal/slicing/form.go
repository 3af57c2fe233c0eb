// Package slicing forms dynamic TPU slices (tpu7x, GKE's dynamic
// slicing): it chooses, for each slice a workload asks for, the 4x4x4
// sub-blocks (cubes) of one block that together make the requested
// shape, adjacent along the right axes. It is pure: the manager gathers
// the cubes and their state, Form answers.
package slicing

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/multislice/multislice/internal/tpu"
)

// Pos is a cube's place in its block's grid of cubes (x, y, z).
type Pos [3]int

// ParsePos reads a position label, "x.y.z".
func ParsePos(s string) (Pos, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Pos{}, fmt.Errorf("position %q: want x.y.z, for example 0.1.0", s)
	}
	var p Pos
	for i, v := range parts {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxGrid {
			return Pos{}, fmt.Errorf("position %q: %q is not a whole number from 0 to %d", s, v, maxGrid)
		}
		p[i] = n
	}
	return p, nil
}

// String formats a position as its label value.
func (p Pos) String() string { return fmt.Sprintf("%d.%d.%d", p[0], p[1], p[2]) }

// maxGrid bounds a block's grid along one axis: a tpu7x block has 144
// cubes (9,216 chips), at most 144 along one axis.
const maxGrid = 144

// Cube is one sub-block as formation sees it.
type Cube struct {
	ID    string // its partition id (the node label's value)
	Block string
	Pos   Pos
	// Free: every host fit for work, no Slice holds the whole of it, and
	// no other workload's TPU pod runs on it.
	Free bool
	// Quarters are the quarters of it sub-slices hold (bit q: quarter q).
	Quarters uint8
}

// whole: free for a super-slice (no part of it held).
func (c *Cube) whole() bool { return c.Free && c.Quarters == 0 }

// Want is one slice to form: a name (its Job) and its chip topology.
type Want struct {
	Name     string
	Topology tpu.Topology
}

// Result is Form's answer: by Want name, its cubes in position order
// (z, then y, then x), and for a sub-slice the quarters of its one cube;
// nil with Why when the wants do not all fit.
type Result struct {
	Cubes    map[string][]string
	Quarters map[string]uint8
	Why      string
}

// Form places every want at once or none. Larger slices go first; each
// takes, among the boxes of free cubes of its shape (every orientation,
// every block), the one that touches the most used cubes and block walls
// (so the free cubes stay together and the largest shapes stay
// formable), then the first block, then the lowest position.
func Form(wants []Want, cubes []Cube) Result {
	blocks := gridsOf(cubes)
	order := slices.Clone(wants)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Topology.Chips() > order[j].Topology.Chips() })
	out := make(map[string][]string, len(wants))
	quarters := map[string]uint8{}
	for _, w := range order {
		if n := SubQuarters(w.Topology); n > 0 {
			c, mask, ok := bestPart(blocks, n)
			if !ok {
				return Result{Why: whyNoPart(w, n, blocks, len(wants))}
			}
			c.Quarters |= mask
			out[w.Name], quarters[w.Name] = []string{c.ID}, mask
			continue
		}
		dims, err := CubeDims(w.Topology)
		if err != nil {
			return Result{Why: fmt.Sprintf("slice %s: %v", w.Name, err)}
		}
		best, ok := bestBox(blocks, dims)
		if !ok {
			return Result{Why: whyNot(w, dims, blocks, len(wants))}
		}
		out[w.Name] = best.take()
	}
	return Result{Cubes: out, Quarters: quarters}
}

// CubeDims is a super-slice's shape in cubes (each chip dimension / 4).
func CubeDims(t tpu.Topology) (Pos, error) {
	if len(t) != 3 {
		return Pos{}, fmt.Errorf("topology %s: a tpu7x slice has three dimensions", t)
	}
	var d Pos
	for i, n := range t {
		if n%tpu.CubeDim != 0 {
			return Pos{}, fmt.Errorf("topology %s: each dimension must be a multiple of %d to be stitched from 4x4x4 cubes", t, tpu.CubeDim)
		}
		d[i] = n / tpu.CubeDim
	}
	return d, nil
}

// grid is one block: its cubes by position.
type grid struct {
	name  string
	size  Pos
	cubes map[Pos]*Cube
}

func gridsOf(cubes []Cube) []*grid {
	byName := map[string]*grid{}
	for i := range cubes {
		c := cubes[i]
		g := byName[c.Block]
		if g == nil {
			g = &grid{name: c.Block, cubes: map[Pos]*Cube{}}
			byName[c.Block] = g
		}
		g.cubes[c.Pos] = &c
		for a := range 3 {
			g.size[a] = max(g.size[a], c.Pos[a]+1)
		}
	}
	out := make([]*grid, 0, len(byName))
	for _, g := range byName {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (g *grid) free(p Pos) bool {
	c := g.cubes[p]
	return c != nil && c.whole()
}

// box is a candidate: a block, an origin and a size in cubes.
type box struct {
	g            *grid
	origin, size Pos
	contact      int
}

// take marks the box's cubes used and returns their ids in position order.
func (b box) take() []string {
	var ids []string
	b.each(func(p Pos) {
		c := b.g.cubes[p]
		c.Free = false
		ids = append(ids, c.ID)
	})
	return ids
}

// each visits the box's positions, z then y then x.
func (b box) each(f func(Pos)) {
	for z := range b.size[2] {
		for y := range b.size[1] {
			for x := range b.size[0] {
				f(Pos{b.origin[0] + x, b.origin[1] + y, b.origin[2] + z})
			}
		}
	}
}

func (b box) allFree() bool {
	ok := true
	b.each(func(p Pos) { ok = ok && b.g.free(p) })
	return ok
}

// touching counts the faces of the box's cubes that meet a wall or a
// cube that is not free.
func (b box) touching() int {
	n := 0
	b.each(func(p Pos) {
		for a := range 3 {
			for _, step := range []int{-1, 1} {
				q := p
				q[a] += step
				inside := q[a] >= b.origin[a] && q[a] < b.origin[a]+b.size[a]
				if !inside && !b.g.free(q) {
					n++
				}
			}
		}
	})
	return n
}

// orientations are the distinct axis orders of dims.
func orientations(dims Pos) []Pos {
	var out []Pos
	for _, perm := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		o := Pos{dims[perm[0]], dims[perm[1]], dims[perm[2]]}
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

func bestBox(blocks []*grid, dims Pos) (box, bool) {
	var best box
	found := false
	for _, g := range blocks {
		for _, size := range orientations(dims) {
			for z := 0; z+size[2] <= g.size[2]; z++ {
				for y := 0; y+size[1] <= g.size[1]; y++ {
					for x := 0; x+size[0] <= g.size[0]; x++ {
						b := box{g: g, origin: Pos{x, y, z}, size: size}
						if !b.allFree() {
							continue
						}
						b.contact = b.touching()
						if !found || b.contact > best.contact {
							best, found = b, true
						}
					}
				}
			}
		}
	}
	return best, found
}

// whyNot says why a want finds no box: no block is large enough in any
// orientation, or not enough of the cubes are free together.
func whyNot(w Want, dims Pos, blocks []*grid, gang int) string {
	need := dims[0] * dims[1] * dims[2]
	prefix := fmt.Sprintf("slice %s (%s) needs %d adjacent free 4x4x4 cubes of one block", w.Name, w.Topology, need)
	if gang > 1 {
		prefix += fmt.Sprintf(" (with the other %d slices of its JobSet, all at once)", gang-1)
	}
	if len(blocks) == 0 {
		return prefix + "; the cluster has no sub-block nodes (labels cloud.google.com/gce-topology-block and cloud.google.com/gke-tpu-partition-4x4x4-id): provision tpu7x sub-blocks"
	}
	var parts []string
	fits := false
	for _, g := range blocks {
		// No free count: it would change, and be written, while what the
		// slice waits for does not.
		parts = append(parts, fmt.Sprintf("block %s (%s cubes)", g.name, dimsText(g.size)))
		for _, o := range orientations(dims) {
			fits = fits || o[0] <= g.size[0] && o[1] <= g.size[1] && o[2] <= g.size[2]
		}
	}
	if !fits {
		return prefix + "; no block is that large in any orientation: " + strings.Join(parts, "; ")
	}
	return prefix + ", and no such set is free now: " + strings.Join(parts, "; ")
}

func dimsText(p Pos) string { return fmt.Sprintf("%dx%dx%d", p[0], p[1], p[2]) }

// Less orders cubes by block and position, z then y then x.
func Less(a, b Cube) int {
	return cmp.Or(cmp.Compare(a.Block, b.Block), cmp.Compare(a.Pos[2], b.Pos[2]), cmp.Compare(a.Pos[1], b.Pos[1]), cmp.Compare(a.Pos[0], b.Pos[0]))
}
