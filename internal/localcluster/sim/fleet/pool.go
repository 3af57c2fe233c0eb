// Package fleet describes the simulated TPU fleet: node pools, multislice
// groups and spare capacity, the fleet config file that declares them, the
// rules a set of pools must obey (as GKE enforces them), and the Node
// objects that make a pool visible to Kubernetes.
package fleet

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/tpu"
)

// Pool is one node pool as the simulated cloud records it.
type Pool struct {
	Name string `json:"name"`
	// Accelerator and Topology make a TPU pool (one slice); leave both
	// empty for a CPU pool.
	Accelerator string `json:"accelerator,omitempty"`
	Topology    string `json:"topology,omitempty"`
	// MachineType defaults to the TPU catalogue's choice; CPU pools need one.
	MachineType string `json:"machineType,omitempty"`
	// NumNodes must equal the slice's hosts for TPU pools (0 means "derive").
	NumNodes int `json:"numNodes,omitempty"`
	// Labels are extra node labels, e.g. the multislice group labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Real pools are made of real hosts on this machine (a kubelet and
	// containerd each, running real containers) instead of kwok's nodes.
	Real bool `json:"real,omitempty"`
}

// Resolved is a pool whose shape has been checked against the catalogue.
type Resolved struct {
	Pool
	// Shape is nil for CPU pools.
	Shape *tpu.Shape
	Nodes int
}

// IsTPU reports whether the pool is a TPU slice.
func (p Pool) IsTPU() bool { return p.Accelerator != "" || p.Topology != "" }

// Resolve validates one pool on its own and derives its shape. Errors name
// the pool field; callers say where the pool came from.
func Resolve(p Pool) (Resolved, error) {
	var errs []error
	if msgs := validation.IsDNS1123Label(p.Name); len(msgs) > 0 || len(p.Name) > 40 {
		errs = append(errs, fmt.Errorf("name %q: must be a lowercase DNS label of at most 40 characters (letters, digits, '-')", p.Name))
	}
	for k, v := range p.Labels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("labels: key %q: %s", k, msgs[0]))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("labels: %s=%q: %s", k, v, msgs[0]))
		}
	}
	r := Resolved{Pool: p, Nodes: p.NumNodes}
	switch {
	case p.IsTPU():
		shape, err := tpu.NewShape(p.Accelerator, p.Topology, p.MachineType)
		if err != nil {
			errs = append(errs, fmt.Errorf("accelerator/topology: %w", err))
			break
		}
		r.Shape, r.MachineType = &shape, shape.MachineType
		if p.NumNodes != 0 && p.NumNodes != shape.Hosts {
			errs = append(errs, fmt.Errorf("numNodes: %d disagrees with topology %s, which has %d hosts of %d chips: use %d or leave it unset",
				p.NumNodes, shape.Topology, shape.Hosts, shape.ChipsPerHost, shape.Hosts))
		}
		r.Nodes = shape.Hosts
	case p.MachineType == "":
		errs = append(errs, errors.New("machineType: a CPU pool needs a machine type (or set accelerator and topology for a TPU pool)"))
	case p.NumNodes < 1:
		errs = append(errs, fmt.Errorf("numNodes: a CPU pool needs at least 1 node (got %d)", p.NumNodes))
	}
	return r, errors.Join(errs...)
}

// GroupLabels names the node labels that join pools into a multislice group.
type GroupLabels struct {
	Name string `json:"name,omitempty"`
	Size string `json:"size,omitempty"`
}

// withDefaults fills in the seed's label names.
func (g GroupLabels) withDefaults() GroupLabels {
	if g.Name == "" {
		g.Name = gke.MultisliceGroupLabel
	}
	if g.Size == "" {
		g.Size = gke.MultisliceGroupSizeLabel
	}
	return g
}

// Group is a multislice group as found among pools.
type Group struct {
	Name  string
	Size  int
	Pools []Resolved
}

// Groups collects the multislice groups of a set of pools and checks GKE's
// rules: every pool of a group has the same group labels and the same TPU
// shape, the shape is multi-host, and the size label is a positive integer.
func Groups(pools []Resolved, keys GroupLabels) ([]Group, error) {
	keys = keys.withDefaults()
	byName := map[string]*Group{}
	var errs []error
	for _, p := range pools {
		name, inGroup := p.Labels[keys.Name]
		sizeText, hasSize := p.Labels[keys.Size]
		if !inGroup && !hasSize {
			continue
		}
		if !inGroup || !hasSize {
			errs = append(errs, fmt.Errorf("pool %s: set both %s and %s, or neither", p.Name, keys.Name, keys.Size))
			continue
		}
		size, err := strconv.Atoi(sizeText)
		if err != nil || size < 1 {
			errs = append(errs, fmt.Errorf("pool %s: %s=%q must be a positive integer", p.Name, keys.Size, sizeText))
			continue
		}
		if p.Shape == nil {
			errs = append(errs, fmt.Errorf("pool %s: only TPU pools can join multislice group %s", p.Name, name))
			continue
		}
		if !p.Shape.MultiHost() {
			errs = append(errs, fmt.Errorf("pool %s: a multislice group cannot be made of single-host slices (%s %s has 1 host): use a multi-host topology such as %s",
				p.Name, p.Accelerator, p.Topology, multiHostExample(*p.Shape)))
			continue
		}
		g := byName[name]
		if g == nil {
			g = &Group{Name: name, Size: size}
			byName[name] = g
		} else if err := sameGroup(g, p, size, keys); err != nil {
			errs = append(errs, err)
			continue
		}
		g.Pools = append(g.Pools, p)
	}
	out := make([]Group, 0, len(byName))
	for _, g := range byName {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

func sameGroup(g *Group, p Resolved, size int, keys GroupLabels) error {
	first := g.Pools[0]
	if size != g.Size {
		return fmt.Errorf("pool %s: %s=%d, but group %s has %s=%d (pool %s): pools of one group share their labels",
			p.Name, keys.Size, size, g.Name, keys.Size, g.Size, first.Name)
	}
	if p.Accelerator != first.Accelerator || p.Shape.Topology.String() != first.Shape.Topology.String() {
		return fmt.Errorf("pool %s: %s %s differs from group %s, which is %s %s (pool %s): pools of one group share their TPU type and topology",
			p.Name, p.Accelerator, p.Topology, g.Name, first.Accelerator, first.Topology, first.Name)
	}
	return nil
}

func multiHostExample(s tpu.Shape) string {
	for _, topo := range s.Generation.Topologies() {
		if m, err := tpu.NewShape(s.Accelerator, topo, ""); err == nil && m.MultiHost() {
			return topo
		}
	}
	return "a larger topology"
}
