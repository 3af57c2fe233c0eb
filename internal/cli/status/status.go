// Package status implements `multislice status`: the local cluster's
// components, its simulated fleet and its JobSets at a glance, or one
// JobSet's slices x workers.
package status

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/jobsetlist"
	"github.com/multislice/multislice/internal/cli/localfleet"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// Options is `multislice status`'s command line.
type Options struct {
	F *cli.Factory
	// JobSet names the JobSet to show ("": the local cluster).
	JobSet    string
	Namespace string
	// AllNamespaces lists the JobSets of every namespace (-A).
	AllNamespaces bool
	Output        cli.Output
	Watch         bool
}

// NewCmdStatus is `multislice status`; runF (nil: statusRun) gets the options.
func NewCmdStatus(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{F: f}
	if runF == nil {
		runF = statusRun
	}
	cmd := &cobra.Command{
		Use:               "status [JOBSET]",
		ValidArgsFunction: jobsetlist.CompleteNames(f),
		Short:             "Show the local cluster (components, memory, fleet), or one JobSet's slices x workers",
		Example: `  multislice status                     the local cluster
  multislice status multislice-job      slices x workers, conditions, recent events
  multislice status multislice-job -w   follow it
  multislice status multislice-job -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Output.Check(); err != nil {
				return err
			}
			o.Namespace = f.Namespace(o.Namespace)
			if len(args) == 1 {
				o.JobSet = args[0]
			} else if o.Watch {
				return fmt.Errorf("--watch follows one JobSet: name it (multislice status JOBSET -w)")
			}
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "namespace of the JobSet (default: the context's)")
	jobsetlist.AllNamespacesFlag(cmd, &o.AllNamespaces)
	cli.OutputFlag(cmd, &o.Output)
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "redraw every two seconds")
	return cmd
}

func statusRun(ctx context.Context, o *Options) error {
	if o.JobSet != "" {
		return jobSetRun(ctx, o)
	}
	return clusterRun(ctx, o)
}

// fleetTimeout bounds the fleet's part of `status`, so that it answers
// within five seconds even when the API server or etcd is down.
// servingDownTimeout is that bound when etcd or the API server is known
// to be stopped: a read then waits for nothing but its deadline, and on a
// busy machine starting the command alone took two seconds.
const (
	fleetTimeout       = 4 * time.Second
	servingDownTimeout = time.Second
)

// fleetDeadline is how long the fleet's part of `status` may take with
// the components in down stopped.
func fleetDeadline(down []string) time.Duration {
	if slices.ContainsFunc(down, localcluster.InControlPlane) {
		return servingDownTimeout
	}
	return fleetTimeout
}

// Cluster is the local cluster as `status -o json|yaml` prints it.
type Cluster struct {
	Components []localcluster.ComponentStatus `json:"components"`
	Pools      []localfleet.Pool              `json:"pools"`
	Groups     []localfleet.Group             `json:"groups"`
	// Blocks are the fleet's tpu7x blocks of sub-blocks (dynamic slicing).
	Blocks []localfleet.Block `json:"blocks,omitempty"`
	// RealHosts and Machine are the fleet's real hosts; empty without.
	RealHosts []RealHost                  `json:"realHosts,omitempty"`
	Machine   *localcluster.RealHostsInfo `json:"realHostsMachine,omitempty"`
	// JobSets are those of the namespace, or of all with -A.
	JobSets []jobsetlist.Item `json:"jobSets"`
}

// RealHost is one real host: its node, its two processes, its pods.
type RealHost struct {
	Name       string `json:"name"`
	Node       string `json:"node"` // Ready, NotReady or Missing
	Kubelet    string `json:"kubelet"`
	Containerd string `json:"containerd"`
	Pods       int    `json:"pods"`
}

// clusterRun prints components, then node pools, multislice groups, real
// hosts and JobSets (-o table or wide), or the whole as one document.
func clusterRun(ctx context.Context, o *Options) error {
	f, out := o.F, o.Output
	home, err := localcluster.At(f.Home())
	if err != nil {
		return err
	}
	comps, err := home.Components()
	if err != nil {
		return err
	}
	if comps == nil {
		return fmt.Errorf("no cluster in %s: start one with `multislice up`", home)
	}
	var down []string
	for _, c := range comps {
		if !c.Running {
			down = append(down, c.Name)
		}
	}
	structured := out.Format != "" && out.Format != "table" && out.Format != "wide"
	if !structured {
		printComponents(f, comps, down)
	}
	client, _, err := f.Client()
	if err != nil {
		return err
	}
	// The fleet comes from the API: whatever is down, answer in seconds.
	ctx, cancel := context.WithTimeout(ctx, fleetDeadline(down))
	defer cancel()
	printable, groups, err := fleetOf(ctx, client, down)
	if err != nil {
		return err
	}
	machine, err := home.RealHosts()
	if err != nil {
		return err
	}
	var real []RealHost
	if machine != nil {
		if real, err = realHosts(ctx, client, comps); err != nil {
			return err
		}
	}
	jobSets, listErr := listJobSets(ctx, o)
	if structured {
		return cli.PrintObject(f.Out, out, Cluster{Components: comps, Pools: printable, Groups: localfleet.Groups(groups),
			Blocks: localfleet.Blocks(printable), RealHosts: real, Machine: machine, JobSets: jobSets})
	}
	fmt.Fprintln(f.Out)
	if err := localfleet.PrintPools(f, printable, out); err != nil {
		return err
	}
	fmt.Fprintln(f.Out)
	localfleet.PrintGroups(f, groups)
	if blocks := localfleet.Blocks(printable); len(blocks) > 0 {
		fmt.Fprintln(f.Out)
		localfleet.PrintBlocks(f, blocks)
	}
	if machine != nil {
		fmt.Fprintln(f.Out)
		printRealHosts(f, real, machine)
	}
	fmt.Fprintln(f.Out)
	return printJobSets(o, jobSets, listErr)
}

// printJobSets is the JOBSETS section, or why there is none.
func printJobSets(o *Options, jobSets []jobsetlist.Item, listErr error) error {
	switch {
	case listErr != nil:
		fmt.Fprintf(o.F.Out, "JobSets: %v\n", listErr)
	case len(jobSets) == 0 && o.AllNamespaces:
		fmt.Fprintln(o.F.Out, "no JobSets")
	case len(jobSets) == 0:
		fmt.Fprintf(o.F.Out, "no JobSets in namespace %s (-A: every namespace)\n", o.Namespace)
	default:
		return jobsetlist.Print(o.F, o.Output, jobSets, o.AllNamespaces)
	}
	return nil
}

// listJobSets are the local cluster's JobSets of the namespace (-n, the
// context's), or of every namespace with -A.
func listJobSets(ctx context.Context, o *Options) ([]jobsetlist.Item, error) {
	c, err := o.F.Objects()
	if err != nil {
		return nil, err
	}
	return jobsetlist.List(ctx, c, o.Namespace, o.AllNamespaces)
}

// fleetOf is the simulated cloud's pools and groups; down names the
// stopped components, which the error blames when the API does not answer.
func fleetOf(ctx context.Context, client kubernetes.Interface, down []string) ([]localfleet.Pool, []cloud.GroupStatus, error) {
	c, err := cloud.Open(ctx, client, "multislice status")
	var pools []cloud.PoolStatus
	var groups []cloud.GroupStatus
	if err == nil {
		pools, groups, err = c.Status(ctx)
	}
	if err != nil {
		why := "the API server does not answer"
		if len(down) > 0 {
			why += " (stopped: " + strings.Join(down, ", ") + ")"
		}
		return nil, nil, fmt.Errorf("%s: no fleet to show: %w", why, err)
	}
	return localfleet.Pools(pools, c.Settings.GroupLabels.Name), groups, nil
}

// realHosts joins the real hosts' nodes, processes and pods.
func realHosts(ctx context.Context, client kubernetes.Interface, comps []localcluster.ComponentStatus) ([]RealHost, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.RealHostLabel + "=true"})
	if err != nil {
		return nil, err
	}
	state := map[string]string{}
	for _, c := range comps {
		state[c.Name] = "STOPPED"
		if c.Running {
			state[c.Name] = "running"
		}
	}
	var out []RealHost
	for _, n := range nodes.Items {
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
		if err != nil {
			return nil, err
		}
		h := RealHost{Name: n.Name, Node: "NotReady", Kubelet: state[localcluster.KubeletName(n.Name)], Containerd: state[localcluster.ContainerdName(n.Name)]}
		if gke.NodeReady(&n) {
			h.Node = "Ready"
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				h.Pods++
			}
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func printRealHosts(f *cli.Factory, hosts []RealHost, m *localcluster.RealHostsInfo) {
	w := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "REAL HOST\tNODE\tKUBELET\tCONTAINERD\tPODS")
	for _, h := range hosts {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", h.Name, h.Node, h.Kubelet, h.Containerd, h.Pods)
	}
	w.Flush()
	fmt.Fprintf(f.Out, "pod network %s on bridge %s; cluster DNS %s; image registry %s (docker.io, registry.k8s.io and ghcr.io pulled from it)\n",
		m.Network, m.Bridge, m.DNS, m.Registry)
}

// printComponents is the components' table, with what is stopped.
func printComponents(f *cli.Factory, comps []localcluster.ComponentStatus, down []string) {
	w := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "COMPONENT\tSTATE\tPID\tPORTS\tMEMORY\tLOG")
	var total int64
	for _, c := range comps {
		state := "running"
		if !c.Running {
			state = "STOPPED"
		}
		total += c.RSSBytes
		fmt.Fprintf(w, "%s\t%s\t%d\t%v\t%s\t%s\n", c.Name, state, c.PID, c.Ports, mib(c.RSSBytes), c.Log)
	}
	fmt.Fprintf(w, "total\t\t\t\t%s\t\n", mib(total))
	w.Flush()
	if len(down) > 0 {
		fmt.Fprintf(f.Out, "\nstopped: %s. `multislice up` restarts them; their logs say why they stopped\n", strings.Join(down, ", "))
	}
}

func mib(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%d MiB", b>>20)
}
