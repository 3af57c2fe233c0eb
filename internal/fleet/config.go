package fleet

import (
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
	// Pools are stand-alone pools: CPU pools or TPU slices outside a group.
	Pools []Pool `json:"pools,omitempty"`
	// Capacity is spare hosts per accelerator that the simulated cloud can
	// still provision beyond the pools above (for new pools and repairs).
	Capacity map[string]int `json:"capacity,omitempty"`
}

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
	if len(c.Groups) == 0 && len(c.Pools) == 0 {
		add("groups", errors.New("the fleet is empty: declare at least one group or pool"))
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
				MachineType: g.MachineType,
				Labels:      map[string]string{keys.Name: g.Name, keys.Size: strconv.Itoa(g.Slices)},
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
	return pools, errors.Join(errs...)
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
