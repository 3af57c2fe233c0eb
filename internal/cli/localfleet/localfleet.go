// Package localfleet is what the commands that read or change the local
// cluster's simulated cloud share (nodepool, chaos, status): opening the
// cloud, and its pools and groups as the CLI prints them.
package localfleet

import (
	"context"
	"fmt"
	"text/tabwriter"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
)

// OpenCloud is the local cluster's simulated cloud, acting as who (named
// in its operation lock); nodepool and chaos change the cloud through it.
func OpenCloud(ctx context.Context, f *cli.Factory, who string) (*cloud.Cloud, error) {
	client, _, err := f.Client()
	if err != nil {
		return nil, err
	}
	return cloud.Open(ctx, client, who)
}

// Group is one multislice group as the CLI prints it.
type Group struct {
	Name          string   `json:"name"`
	Size          int      `json:"size"`
	Pools         []string `json:"pools"`
	HealthySlices int      `json:"healthySlices"`
	Complete      bool     `json:"complete"`
}

// Groups is the printable view of the multislice groups.
func Groups(groups []cloud.GroupStatus) []Group {
	out := make([]Group, 0, len(groups))
	for _, g := range groups {
		pg := Group{Name: g.Name, Size: g.Size, HealthySlices: g.HealthySlice, Complete: g.Complete(), Pools: []string{}}
		for _, p := range g.Pools {
			pg.Pools = append(pg.Pools, p.Name)
		}
		out = append(out, pg)
	}
	return out
}

// Pool is one node pool as the CLI prints it.
type Pool struct {
	Name  string `json:"name"`
	Group string `json:"group,omitempty"`
	// Block and Position place a tpu7x sub-block (dynamic slicing) in its
	// block's grid of cubes.
	Block       string `json:"block,omitempty"`
	Position    string `json:"position,omitempty"`
	MachineType string `json:"machineType"`
	Accelerator string `json:"accelerator,omitempty"`
	Topology    string `json:"topology,omitempty"`
	TPUType     string `json:"tpuType,omitempty"`
	Nodes       int    `json:"nodes"`
	Present     int    `json:"present"`
	Ready       int    `json:"ready"`
	Healthy     bool   `json:"healthy"`
	Problem     string `json:"problem,omitempty"`
}

// Pools is the printable view of the pools' status; group names the
// multislice-group label.
func Pools(pools []cloud.PoolStatus, group string) []Pool {
	out := make([]Pool, 0, len(pools))
	for _, p := range pools {
		v := Pool{Name: p.Name, Group: p.Labels[group], MachineType: p.MachineType, Nodes: p.Nodes, Present: p.Present, Ready: p.Ready,
			Healthy: p.Healthy(), Problem: p.Problem, Block: p.Labels[gke.TopologyBlockLabel], Position: p.Labels[slicev1beta1.PartitionPositionLabel]}
		if p.Shape != nil {
			v.Accelerator, v.Topology, v.TPUType = p.Accelerator, p.Shape.Topology.String(), p.Shape.AcceleratorType()
		}
		out = append(out, v)
	}
	return out
}

// PrintPools prints one line per node pool (-o table, wide, json, yaml).
func PrintPools(f *cli.Factory, pools []Pool, out cli.Output) error {
	return cli.Print(f.Out, out, pools, func(wide bool) string {
		h := "NODEPOOL\tMACHINE TYPE\tACCELERATOR\tTOPOLOGY\tTPU TYPE\tNODES\tREADY\tHEALTH"
		if wide {
			h += "\tGROUP\tPRESENT\tBLOCK\tPOSITION"
		}
		return h
	}, func(p Pool, wide bool) string {
		health := "healthy"
		if p.Problem != "" {
			health = p.Problem
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s", p.Name, p.MachineType, cli.OrDash(p.Accelerator), cli.OrDash(p.Topology), cli.OrDash(p.TPUType), p.Nodes, p.Ready, health)
		if wide {
			row += fmt.Sprintf("\t%s\t%d\t%s\t%s", cli.OrDash(p.Group), p.Present, cli.OrDash(p.Block), cli.OrDash(p.Position))
		}
		return row
	})
}

// PrintGroups prints one line per multislice group.
func PrintGroups(f *cli.Factory, groups []cloud.GroupStatus) {
	if len(groups) == 0 {
		fmt.Fprintln(f.Out, "no multislice groups")
		return
	}
	w := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSIZE\tPOOLS\tHEALTHY SLICES\tCOMPLETE")
	for _, g := range groups {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%t\n", g.Name, g.Size, len(g.Pools), g.HealthySlice, g.Complete())
	}
	w.Flush()
}

// Block is one tpu7x block of sub-blocks (dynamic slicing) as the CLI
// prints it: its cubes, and how many are healthy.
type Block struct {
	Name    string   `json:"name"`
	Cubes   []string `json:"cubes"`
	Healthy int      `json:"healthy"`
}

// Blocks gathers the pools that are sub-blocks into their blocks.
func Blocks(pools []Pool) []Block {
	var out []Block
	at := map[string]int{}
	for _, p := range pools {
		if p.Block == "" {
			continue
		}
		i, ok := at[p.Block]
		if !ok {
			i = len(out)
			at[p.Block] = i
			out = append(out, Block{Name: p.Block})
		}
		out[i].Cubes = append(out[i].Cubes, p.Name)
		if p.Healthy {
			out[i].Healthy++
		}
	}
	return out
}

// PrintBlocks prints one line per block; nothing when the fleet has none.
func PrintBlocks(f *cli.Factory, blocks []Block) {
	if len(blocks) == 0 {
		return
	}
	w := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BLOCK\tSUB-BLOCKS\tHEALTHY\tSLICES")
	for _, b := range blocks {
		fmt.Fprintf(w, "%s\t%d\t%d\tformed when scheduled (kubectl get slices)\n", b.Name, len(b.Cubes), b.Healthy)
	}
	w.Flush()
}
