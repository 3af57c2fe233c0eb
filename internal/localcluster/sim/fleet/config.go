package fleet

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/multislice/multislice/internal/tpu"
)

// Config is the fleet config file: what `multislice up` provisions.
type Config struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// GroupLabels renames the MultisliceGroup/MultisliceGroupSize labels.
	GroupLabels GroupLabels `json:"groupLabels,omitempty"`
	// Groups are multislice groups: Slices pools (plus Spares) of one shape.
	Groups []GroupSpec `json:"groups,omitempty"`
	// Blocks are tpu7x blocks of 4x4x4 sub-blocks for dynamic slicing:
	// one node pool per sub-block, slices formed from them at schedule time.
	Blocks []BlockSpec `json:"blocks,omitempty"`
	// Pools are stand-alone pools: CPU pools or TPU slices outside a group.
	Pools []Pool `json:"pools,omitempty"`
	// Capacity is spare hosts per accelerator that the simulated cloud can
	// still provision beyond the pools above (for new pools and repairs).
	Capacity map[string]int `json:"capacity,omitempty"`
	// Limits bound what the fleet may ask for, so that a typo (numNodes:
	// 2000000000) is refused before anything starts; raise them on purpose.
	Limits Limits `json:"limits,omitempty"`
}

// Limits bound the size of a fleet; zero means the default.
type Limits struct {
	// Nodes bounds the simulated nodes: pools' nodes plus spare capacity.
	Nodes int `json:"nodes,omitempty"`
	// Pools bounds the node pools, spares included.
	Pools int `json:"pools,omitempty"`
	// RealHosts bounds the real hosts (nodes of real pools): each is a
	// kubelet and a containerd on this machine.
	RealHosts int `json:"realHosts,omitempty"`
}

// Default limits: a 1,000-node fleet is Ready in about 20 s on two cores.
// A real host costs about 60 MiB and some CPU while idle (kubelet and
// containerd); eight fit beside the control plane on two cores.
const (
	DefaultMaxNodes     = 5000
	DefaultMaxPools     = 1000
	DefaultMaxRealHosts = 8
)

func (l Limits) nodes() int     { return cmp.Or(l.Nodes, DefaultMaxNodes) }
func (l Limits) pools() int     { return cmp.Or(l.Pools, DefaultMaxPools) }
func (l Limits) realHosts() int { return cmp.Or(l.RealHosts, DefaultMaxRealHosts) }

// GroupSpec declares one multislice group.
type GroupSpec struct {
	Name        string `json:"name"`
	Accelerator string `json:"accelerator"`
	Topology    string `json:"topology"`
	MachineType string `json:"machineType,omitempty"`
	// Slices is the group size (MultisliceGroupSize) and pool count.
	Slices int `json:"slices"`
	// Spares are extra pools in the group, ready to replace a failed slice.
	Spares int `json:"spares,omitempty"`
	// Real makes every pool of the group real hosts (see Pool.Real).
	Real bool `json:"real,omitempty"`
}

const (
	// APIVersion and Kind identify a fleet config file.
	APIVersion = "multislice.dev/v1alpha1"
	Kind       = "Fleet"
)

//go:embed default.yaml
var defaultConfig []byte

// Default is the seed's fleet: one group of four v4-16 slices with a spare.
func Default() *Config {
	c, err := Parse(defaultConfig)
	if err != nil {
		panic(fmt.Sprintf("embedded default fleet is invalid: %v", err)) // a build defect, caught by tests
	}
	return c
}

// DefaultYAML is the default fleet config, as documentation for users.
func DefaultYAML() []byte { return defaultConfig }

// Load reads and validates a fleet config file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fleet config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("fleet config %s:\n%w", path, err)
	}
	return c, nil
}

// Parse decodes a fleet config strictly (unknown fields are errors) and
// validates it.
func Parse(data []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("not a valid fleet config: %w", err)
	}
	if _, err := c.Expand(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Keys returns the group label names in effect.
func (c *Config) Keys() GroupLabels { return c.GroupLabels.withDefaults() }

// Expand validates the whole config and returns every pool it declares,
// group pools first. Each error names the field to fix.
func (c *Config) Expand() ([]Resolved, error) {
	var errs []error
	add := func(field string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
	}
	if c.APIVersion != APIVersion {
		add("apiVersion", fmt.Errorf("got %q, want %s", c.APIVersion, APIVersion))
	}
	if c.Kind != Kind {
		add("kind", fmt.Errorf("got %q, want %s", c.Kind, Kind))
	}
	if len(c.Groups) == 0 && len(c.Pools) == 0 && len(c.Blocks) == 0 {
		add("groups", errors.New("the fleet is empty: declare at least one group, block or pool"))
	}
	if c.Limits.Nodes < 0 || c.Limits.Pools < 0 || c.Limits.RealHosts < 0 {
		add("limits", fmt.Errorf("must not be negative (got nodes %d, pools %d, realHosts %d); leave them unset for the defaults (%d nodes, %d pools, %d real hosts)",
			c.Limits.Nodes, c.Limits.Pools, c.Limits.RealHosts, DefaultMaxNodes, DefaultMaxPools, DefaultMaxRealHosts))
	}
	if err := c.checkSize(); err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	keys := c.Keys()
	var pools []Resolved
	seen := map[string]string{}
	for i, g := range c.Groups {
		field := fmt.Sprintf("groups[%d]", i)
		if g.Name == "" {
			add(field+".name", errors.New("required: the value of the "+keys.Name+" label"))
		}
		if g.Slices < 1 {
			add(field+".slices", fmt.Errorf("must be at least 1 (got %d)", g.Slices))
		}
		if g.Spares < 0 {
			add(field+".spares", fmt.Errorf("must not be negative (got %d)", g.Spares))
		}
		for j := 0; j < g.Slices+g.Spares; j++ {
			p := Pool{
				Name: fmt.Sprintf("%s-np-%d", g.Name, j), Accelerator: g.Accelerator, Topology: g.Topology,
				MachineType: g.MachineType, Real: g.Real,
				Labels: map[string]string{keys.Name: g.Name, keys.Size: strconv.Itoa(g.Slices)},
			}
			r, err := Resolve(p)
			if err != nil {
				add(field, err)
				break // one message per group, not one per pool
			}
			pools = append(pools, r)
			seen[p.Name] = field
		}
	}
	for i, b := range c.Blocks {
		field := fmt.Sprintf("blocks[%d]", i)
		subBlocks, err := b.pools()
		if err != nil {
			add(field, err)
			continue
		}
		for _, p := range subBlocks {
			r, err := Resolve(p)
			if err != nil {
				add(field, err)
				break
			}
			if prev, dup := seen[p.Name]; dup {
				add(field+".name", fmt.Errorf("its sub-block %q is already declared by %s: pool names are unique", p.Name, prev))
				break
			}
			pools = append(pools, r)
			seen[p.Name] = field
		}
	}
	for i, p := range c.Pools {
		field := fmt.Sprintf("pools[%d]", i)
		r, err := Resolve(p)
		add(field, err)
		if prev, dup := seen[p.Name]; dup {
			add(field+".name", fmt.Errorf("%q is already declared by %s: pool names are unique", p.Name, prev))
		}
		if err == nil {
			pools = append(pools, r)
			seen[p.Name] = field
		}
	}
	if _, err := Groups(pools, keys); err != nil {
		add("groups", err)
	}
	for _, acc := range sortedKeys(c.Capacity) {
		if _, err := tpu.ForAccelerator(acc); err != nil {
			add("capacity", err)
		}
		if c.Capacity[acc] < 0 {
			add("capacity."+acc, fmt.Errorf("spare hosts must not be negative (got %d)", c.Capacity[acc]))
		}
	}
	if len(errs) == 0 {
		add("fleet", c.checkNodes(pools))
		add("fleet", c.checkRealHosts(pools))
	}
	return pools, errors.Join(errs...)
}

// checkSize refuses a fleet over its limits before any pool is built: the
// pools of a group are expanded one by one, so a huge count must stop here.
func (c *Config) checkSize() error {
	pools := len(c.Pools)
	for i, g := range c.Groups {
		if g.Slices > c.Limits.pools() || g.Spares > c.Limits.pools() {
			return fmt.Errorf("groups[%d]: %d slices and %d spares exceed the limit of %d pools: lower them, or raise limits.pools in the fleet file on purpose",
				i, g.Slices, g.Spares, c.Limits.pools())
		}
		pools += max(g.Slices, 0) + max(g.Spares, 0)
	}
	for i, b := range c.Blocks {
		if b.SubBlocks > tpu.MaxDynamicChips/tpu.CubeChips {
			return fmt.Errorf("blocks[%d].subBlocks: %d is more than a tpu7x block's %d sub-blocks", i, b.SubBlocks, tpu.MaxDynamicChips/tpu.CubeChips)
		}
		pools += max(b.SubBlocks, 0)
	}
	if pools > c.Limits.pools() {
		return fmt.Errorf("the fleet has %d node pools, more than the limit of %d: use fewer, or raise limits.pools in the fleet file on purpose", pools, c.Limits.pools())
	}
	for i, p := range c.Pools {
		if p.NumNodes > c.Limits.nodes() {
			return fmt.Errorf("pools[%d].numNodes: %d is more than the limit of %d nodes: lower it, or raise limits.nodes in the fleet file on purpose", i, p.NumNodes, c.Limits.nodes())
		}
	}
	for _, acc := range sortedKeys(c.Capacity) {
		if c.Capacity[acc] > c.Limits.nodes() {
			return fmt.Errorf("capacity.%s: %d spare hosts is more than the limit of %d nodes: lower it, or raise limits.nodes in the fleet file on purpose", acc, c.Capacity[acc], c.Limits.nodes())
		}
	}
	return nil
}

// HostCount is how many hosts the pools hold.
func HostCount(pools []Resolved) int {
	n := 0
	for _, p := range pools {
		n += p.Nodes
	}
	return n
}

// RealHostCount is how many real hosts the pools hold.
func RealHostCount(pools []Resolved) int {
	n := 0
	for _, p := range pools {
		if p.Real {
			n += p.Nodes
		}
	}
	return n
}

// checkRealHosts refuses more real hosts than the limit: each is a kubelet
// and a containerd on this machine.
func (c *Config) checkRealHosts(pools []Resolved) error {
	if n := RealHostCount(pools); n > c.Limits.realHosts() {
		return fmt.Errorf("limits.realHosts: the fleet has %d real hosts, more than the limit of %d (each is a kubelet and a containerd on this machine): make fewer pools real, or raise limits.realHosts in the fleet file on purpose", n, c.Limits.realHosts())
	}
	return nil
}

// checkNodes refuses a fleet whose pools and spare capacity together are
// more nodes than its limit.
func (c *Config) checkNodes(pools []Resolved) error {
	n := HostCount(pools)
	for _, v := range c.Capacity {
		n += max(v, 0)
	}
	if n > c.Limits.nodes() {
		return fmt.Errorf("limits.nodes: the fleet has %d nodes with its spare capacity, more than the limit of %d: shrink it, or raise limits.nodes in the fleet file on purpose", n, c.Limits.nodes())
	}
	return nil
}

// Quota is the total hosts per accelerator the simulated cloud may run:
// what the fleet's pools use plus the declared spare capacity.
func (c *Config) Quota(pools []Resolved) map[string]int {
	q := map[string]int{}
	for acc, n := range c.Capacity {
		q[acc] = n
	}
	for _, p := range pools {
		if p.Shape != nil {
			q[p.Accelerator] += p.Nodes
		}
	}
	return q
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
