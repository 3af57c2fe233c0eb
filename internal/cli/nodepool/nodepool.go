// Package nodepool implements `multislice nodepool`, the simulated cloud's
// counterpart of `gcloud container node-pools create|update|delete|list`.
package nodepool

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/multislice/multislice/internal/cli/localfleet"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/tpu"
)

// NewCmdNodepool is `multislice nodepool`.
func NewCmdNodepool(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "nodepool",
		Aliases: []string{"node-pools", "nodepools"},
		Short:   "Create, update, delete and inspect node pools of the simulated TPU cloud",
	}
	cmd.AddCommand(NewCmdCreate(f, nil), NewCmdUpdate(f, nil), NewCmdDelete(f, nil), NewCmdList(f, nil), NewCmdStatus(f, nil),
		NewCmdMaintenance(f, nil))
	return cmd
}

// CreateOptions is `nodepool create`'s command line, its flags named as
// in gcloud.
type CreateOptions struct {
	F           *cli.Factory
	Name        string
	MachineType string
	TPUTopology string
	NodeLabels  map[string]string
	NumNodes    int
	Wait        time.Duration
}

// gcloudOnly are gcloud flags accepted so a pasted command works; the
// simulated cloud has a single region and cluster.
var gcloudOnly = []string{"region", "cluster", "node-locations", "reservation-affinity", "reservation", "project", "zone"}

// NewCmdCreate is `nodepool create`; runF (nil: createRun) gets the options.
func NewCmdCreate(f *cli.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	o := &CreateOptions{F: f}
	if runF == nil {
		runF = createRun
	}
	cmd := &cobra.Command{
		Use:   "create NAME --machine-type=TYPE [--tpu-topology=AxBxC] [--node-labels=k=v,...] [--num-nodes=N]",
		Short: "Create a node pool: one TPU slice, or CPU nodes",
		Example: `  multislice nodepool create pool-a --machine-type=ct4p-hightpu-4t --tpu-topology=2x2x2 \
      --node-labels=MultisliceGroup=group-a,MultisliceGroupSize=2
  multislice nodepool create cpu --machine-type=e2-standard-8 --num-nodes=3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.MachineType, "machine-type", "", "machine type, e.g. ct4p-hightpu-4t, ct5lp-hightpu-4t, ct6e-standard-4t, e2-standard-8 (required)")
	cmd.Flags().StringVar(&o.TPUTopology, "tpu-topology", "", "TPU topology of the slice, e.g. 2x2x2 or 4x4")
	cmd.Flags().StringToStringVar(&o.NodeLabels, "node-labels", nil, "node labels, e.g. MultisliceGroup=g,MultisliceGroupSize=4")
	cmd.Flags().IntVar(&o.NumNodes, "num-nodes", 0, "number of nodes; for a TPU slice it must equal the topology's hosts (default: derived)")
	cmd.Flags().DurationVar(&o.Wait, "wait", 2*time.Minute, "wait this long for the nodes to be Ready (0: do not wait)")
	addGcloudOnly(cmd)
	_ = cmd.MarkFlagRequired("machine-type")
	return cmd
}

func addGcloudOnly(cmd *cobra.Command) {
	for _, name := range gcloudOnly {
		cmd.Flags().String(name, "", "accepted for gcloud compatibility; ignored by the simulated cloud")
		_ = cmd.Flags().MarkHidden(name)
	}
}

// PoolFromFlags turns gcloud-style flags into a pool: a TPU machine type
// makes a slice whose accelerator follows from the machine type.
func PoolFromFlags(opts *CreateOptions) (fleet.Pool, error) {
	p := fleet.Pool{Name: opts.Name, MachineType: opts.MachineType, NumNodes: opts.NumNodes, Labels: opts.NodeLabels}
	if opts.NumNodes < 0 || opts.NumNodes > fleet.DefaultMaxNodes {
		return p, fmt.Errorf("--num-nodes: must be 0 to %d (got %d)", fleet.DefaultMaxNodes, opts.NumNodes)
	}
	g, _, err := tpu.ForMachineType(opts.MachineType)
	switch {
	case err == nil:
		if opts.TPUTopology == "" {
			return p, fmt.Errorf("--tpu-topology is required for TPU machine type %s (for example %s)", opts.MachineType, strings.Join(g.Topologies(), ", "))
		}
		p.Accelerator, p.Topology = g.PrimaryAccelerator(), opts.TPUTopology
	case opts.TPUTopology != "":
		return p, fmt.Errorf("--machine-type: %w", err)
	}
	return p, nil
}

// createRun creates the pool and waits for its nodes.
func createRun(ctx context.Context, o *CreateOptions) error {
	p, err := PoolFromFlags(o)
	if err != nil {
		return err
	}
	c, err := localfleet.OpenCloud(ctx, o.F, "multislice nodepool create")
	if err != nil {
		return err
	}
	if err := c.CreatePool(ctx, p); err != nil {
		return err
	}
	r, _ := fleet.Resolve(p)
	what := fmt.Sprintf("%d nodes of %s", r.Nodes, r.MachineType)
	if r.Shape != nil {
		what = fmt.Sprintf("%s (%s %s: %d hosts of %d chips)", r.Shape.AcceleratorType(), r.Accelerator, r.Shape.Topology, r.Nodes, r.Shape.ChipsPerHost)
	}
	fmt.Fprintf(o.F.Out, "Created node pool %s: %s.\n", p.Name, what)
	return waitReady(ctx, o.F, c, p.Name, o.Wait)
}

func waitReady(ctx context.Context, f *cli.Factory, c *cloud.Cloud, name string, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	deadline := time.Now().Add(wait)
	for {
		pools, _, err := c.Status(ctx)
		if err != nil {
			return err
		}
		for _, p := range pools {
			if p.Name == name && p.Healthy() {
				fmt.Fprintf(f.Out, "Node pool %s: %d/%d nodes Ready.\n", name, p.Ready, p.Nodes)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node pool %s: nodes not Ready after %s; see `multislice status` and the kwok log", name, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// UpdateOptions is `nodepool update`'s command line.
type UpdateOptions struct {
	F          *cli.Factory
	Name       string
	NodeLabels map[string]string
}

// NewCmdUpdate is `nodepool update`; runF (nil: updateRun) gets the options.
func NewCmdUpdate(f *cli.Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	o := &UpdateOptions{F: f}
	if runF == nil {
		runF = updateRun
	}
	cmd := &cobra.Command{
		Use:     "update NAME --node-labels=k=v,...",
		Short:   "Add or change node labels of a pool (e.g. join a multislice group)",
		Example: `  multislice nodepool update pool-a --node-labels=MultisliceGroup=group-a,MultisliceGroupSize=2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.NodeLabels) == 0 {
				return fmt.Errorf("--node-labels is required: the labels to set, e.g. --node-labels=MultisliceGroup=g,MultisliceGroupSize=4")
			}
			o.Name = args[0]
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringToStringVar(&o.NodeLabels, "node-labels", nil, "node labels to add or change")
	addGcloudOnly(cmd)
	return cmd
}

func updateRun(ctx context.Context, o *UpdateOptions) error {
	c, err := localfleet.OpenCloud(ctx, o.F, "multislice nodepool update")
	if err != nil {
		return err
	}
	if err := c.UpdatePool(ctx, o.Name, o.NodeLabels); err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "Updated node pool %s: labels %s.\n", o.Name, labels.Set(o.NodeLabels))
	return nil
}

// DeleteOptions is `nodepool delete`'s command line.
type DeleteOptions struct {
	F    *cli.Factory
	Name string
}

// NewCmdDelete is `nodepool delete`; runF (nil: deleteRun) gets the options.
func NewCmdDelete(f *cli.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	o := &DeleteOptions{F: f}
	if runF == nil {
		runF = deleteRun
	}
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a node pool and its nodes, freeing its capacity",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return runF(cmd.Context(), o)
		},
	}
	addGcloudOnly(cmd)
	return cmd
}

func deleteRun(ctx context.Context, o *DeleteOptions) error {
	c, err := localfleet.OpenCloud(ctx, o.F, "multislice nodepool delete")
	if err != nil {
		return err
	}
	if err := c.DeletePool(ctx, o.Name); err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "Deleted node pool %s.\n", o.Name)
	return nil
}

// ListOptions is `nodepool list`'s command line.
type ListOptions struct {
	F      *cli.Factory
	Output cli.Output
}

// NewCmdList is `nodepool list`; runF (nil: listRun) gets the options.
func NewCmdList(f *cli.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	o := &ListOptions{F: f}
	if runF == nil {
		runF = listRun
	}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List node pools with their shape and Ready nodes",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	cli.OutputFlag(cmd, &o.Output)
	return cmd
}

func listRun(ctx context.Context, o *ListOptions) error {
	c, err := localfleet.OpenCloud(ctx, o.F, "multislice nodepool list")
	if err != nil {
		return err
	}
	pools, _, err := c.Status(ctx)
	if err != nil {
		return err
	}
	return localfleet.PrintPools(o.F, localfleet.Pools(pools, c.Settings.GroupLabels.Name), o.Output)
}

// StatusOptions is `nodepool status`'s command line.
type StatusOptions struct {
	F        *cli.Factory
	Selector string
	Output   string
}

// NewCmdStatus is `nodepool status`; runF (nil: statusRun) gets the options.
func NewCmdStatus(f *cli.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	o := &StatusOptions{F: f}
	if runF == nil {
		runF = statusRun
	}
	cmd := &cobra.Command{
		Use:   "status -l MultisliceGroup=NAME",
		Short: "Count the Ready nodes matching a label selector and say whether each multislice group is complete",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Output != "" && o.Output != "json" && o.Output != "yaml" {
				return fmt.Errorf("-o %q: use json or yaml, or nothing for the summary", o.Output)
			}
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "node label selector, e.g. MultisliceGroup=multislice-group-1")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "json or yaml: one document (nodes, readyNodes, groups) for scripts")
	return cmd
}

// statusRun prints the Ready node count of the selected nodes (the seed's
// `kubectl get nodes -l ... | grep Ready | wc -l`) and the state of every
// multislice group they belong to; as one document with output json or yaml.
func statusRun(ctx context.Context, o *StatusOptions) error {
	f, selector, output := o.F, o.Selector, o.Output
	sel, err := labels.Parse(selector)
	if err != nil {
		return fmt.Errorf("-l %q: %w", selector, err)
	}
	c, err := localfleet.OpenCloud(ctx, f, "multislice nodepool status")
	if err != nil {
		return err
	}
	client, _, err := f.Client()
	if err != nil {
		return err
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	ready, poolsSeen := 0, map[string]bool{}
	for i := range nodes.Items {
		if gke.NodeReady(&nodes.Items[i]) {
			ready++
		}
		poolsSeen[nodes.Items[i].Labels[gke.NodePoolLabel]] = true
	}
	_, groups, err := c.Status(ctx)
	if err != nil {
		return err
	}
	var shown []cloud.GroupStatus
	for _, g := range groups {
		for _, p := range g.Pools {
			if poolsSeen[p.Name] {
				shown = append(shown, g)
				break
			}
		}
	}
	sort.Slice(shown, func(i, j int) bool { return shown[i].Name < shown[j].Name })
	if output != "" {
		return cli.PrintObject(f.Out, cli.Output{Format: output}, struct {
			Selector   string             `json:"selector"`
			Nodes      int                `json:"nodes"`
			ReadyNodes int                `json:"readyNodes"`
			Groups     []localfleet.Group `json:"groups"`
		}{selector, len(nodes.Items), ready, localfleet.Groups(shown)})
	}
	fmt.Fprintf(f.Out, "Ready nodes: %d of %d matching %q\n", ready, len(nodes.Items), selector)
	for _, g := range shown {
		hosts := 0
		if len(g.Pools) > 0 {
			hosts = g.Pools[0].Nodes
		}
		verdict := "complete"
		if !g.Complete() {
			verdict = fmt.Sprintf("INCOMPLETE: needs %d healthy slices", g.Size)
		}
		fmt.Fprintf(f.Out, "Group %s: %s (%s, %d hosts each; %d pools)\n",
			g.Name, verdict, g.Health(), hosts, len(g.Pools))
	}
	return nil
}
