// Package kueue implements `multislice kueue`: Kueue's queues made from
// the fleet, and MultiKueue connections to worker clusters.
package kueue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/kueue"
)

// NewCmdKueue is `multislice kueue`.
func NewCmdKueue(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kueue",
		Short: "Run workloads through Kueue: queues from the fleet, MultiKueue worker clusters",
		Long: `Kueue admits JobSets by quota; Multislice then places their slices.
Start a local cluster with Kueue (multislice up --kueue), make its queues
(multislice kueue init), and submit with multislice workload create --kueue-queue ` + kueue.LocalQueueName + `.`,
	}
	cmd.AddCommand(NewCmdInit(f, nil), NewCmdConnect(f, nil))
	return cmd
}

// InitOptions are the flags of `kueue init`.
type InitOptions struct {
	F          *cli.Factory
	Namespace  string
	GroupLabel string
}

// NewCmdInit is `kueue init`; runF (nil: initRun) gets the options.
func NewCmdInit(f *cli.Factory, runF func(context.Context, *InitOptions) error) *cobra.Command {
	o := &InitOptions{F: f}
	if runF == nil {
		runF = initRun
	}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create Kueue's queues from the fleet: a flavor per TPU group, quotas of its chips, CPU and memory",
		Long: `Create, or bring up to date with the nodes, what Kueue needs to admit this
fleet's workloads: a ResourceFlavor per multislice group (per accelerator and
topology outside groups) with its node labels, and one for nodes without TPUs;
the ClusterQueue ` + kueue.ClusterQueueName + ` whose quotas are the flavors' chips, CPU and
memory (a higher priority preempts a lower one); the LocalQueue
` + kueue.LocalQueueName + ` in the namespace; and xpk's priorities as WorkloadPriorityClasses.
Run it again after node pools change.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Namespace = f.Namespace(o.Namespace)
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "namespace of the LocalQueue (default: the context's)")
	cmd.Flags().StringVar(&o.GroupLabel, "group-label", gke.MultisliceGroupLabel, "node label naming a multislice group; each group is a flavor")
	return cmd
}

// initRun makes or updates the queues from the nodes.
func initRun(ctx context.Context, o *InitOptions) error {
	f := o.F
	cfg, client, err := clients(f)
	if err != nil {
		return err
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	flavors := kueue.Flavors(nodes.Items, o.GroupLabel)
	objs, err := kueue.Queues(flavors, kueue.QueueOptions{Namespace: o.Namespace})
	if err != nil {
		return err
	}
	if err := install.Apply(ctx, cfg, "multislice-kueue-init", objs); err != nil {
		return err
	}
	w := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FLAVOR\tCHIPS\tCPU\tMEMORY\tNODE LABELS")
	for _, fl := range flavors {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", fl.Name, fl.Chips.String(), fl.CPU.String(), fl.Memory.String(), labels.FormatLabels(fl.NodeLabels))
	}
	_ = w.Flush()
	fmt.Fprintf(f.Out, "ClusterQueue %s and LocalQueue %s/%s ready: multislice workload create --kueue-queue %s ...\n",
		kueue.ClusterQueueName, o.Namespace, kueue.LocalQueueName, kueue.LocalQueueName)
	return nil
}

// ConnectOptions are the flags of `kueue connect`.
type ConnectOptions struct {
	F                *cli.Factory
	WorkerKubeconfig string
	ClusterQueue     string
	WorkerName       string
	Wait             time.Duration
}

// NewCmdConnect is `kueue connect`; runF (nil: connectRun) gets the options.
func NewCmdConnect(f *cli.Factory, runF func(context.Context, *ConnectOptions) error) *cobra.Command {
	o := &ConnectOptions{F: f}
	if runF == nil {
		runF = connectRun
	}
	cmd := &cobra.Command{
		Use:   "connect --worker-kubeconfig FILE [--cluster-queue NAME]",
		Short: "Make this cluster a MultiKueue manager of a worker cluster",
		Long: `Make this cluster (the one --kubeconfig or the local cluster names) a MultiKueue
manager of the worker cluster FILE reaches: the Secret with the worker's
kubeconfig, a MultiKueueCluster, a MultiKueueConfig and an AdmissionCheck, and
the ClusterQueue's reference to it. A JobSet submitted to the ClusterQueue then
runs on the worker (which needs Kueue and the same queues: multislice kueue
init there), its status mirrored back; here it stays suspended and no pod runs.`,
		Example: `  MULTISLICE_HOME=~/.multislice-worker multislice up --kueue && MULTISLICE_HOME=~/.multislice-worker multislice kueue init
  multislice up --kueue && multislice kueue init
  multislice kueue connect --worker-kubeconfig ~/.multislice-worker/kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.WorkerKubeconfig, "worker-kubeconfig", "", "kubeconfig of the worker cluster, credentials inline (required)")
	cmd.Flags().StringVar(&o.ClusterQueue, "cluster-queue", kueue.ClusterQueueName, "the ClusterQueue whose workloads go to the worker")
	cmd.Flags().StringVar(&o.WorkerName, "worker-name", "worker", "name of the worker cluster (its MultiKueueCluster and AdmissionCheck)")
	cmd.Flags().DurationVar(&o.Wait, "wait", time.Minute, "wait this long for Kueue to reach the worker (0: do not wait)")
	_ = cmd.MarkFlagRequired("worker-kubeconfig")
	return cmd
}

// Connection reads the worker's kubeconfig and checks the flags.
func (o *ConnectOptions) Connection() (kueue.Connection, error) {
	if o.Wait < 0 || o.Wait > time.Hour {
		return kueue.Connection{}, fmt.Errorf("--wait=%s: want 0 (do not wait) to 1h", o.Wait)
	}
	data, err := os.ReadFile(o.WorkerKubeconfig)
	if err != nil {
		return kueue.Connection{}, fmt.Errorf("--worker-kubeconfig: %w", err)
	}
	conn := kueue.Connection{Worker: o.WorkerName, Kubeconfig: data, ClusterQueue: o.ClusterQueue}
	return conn, conn.Validate()
}

// connectRun makes this cluster a MultiKueue manager of the worker.
func connectRun(ctx context.Context, o *ConnectOptions) error {
	f := o.F
	conn, err := o.Connection()
	if err != nil {
		return err
	}
	cfg, _, err := clients(f)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cq := schema.GroupVersionResource{Group: kueue.Group, Version: "v1beta2", Resource: "clusterqueues"}
	if _, err := dyn.Resource(cq).Get(ctx, o.ClusterQueue, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("--cluster-queue %s: %w (make the queues with `multislice kueue init`)", o.ClusterQueue, err)
	}
	// Another field manager than init's: init's apply must not drop the
	// admission check, nor this one init's quotas.
	if err := install.Apply(ctx, cfg, "multislice-kueue-connect", conn.Objects()); err != nil {
		return err
	}
	if o.Wait <= 0 {
		fmt.Fprintf(f.Out, "MultiKueue worker %s added to ClusterQueue %s\n", o.WorkerName, o.ClusterQueue)
		return nil
	}
	mkc := schema.GroupVersionResource{Group: kueue.Group, Version: "v1beta2", Resource: "multikueueclusters"}
	var why string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.Wait, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(mkc).Get(ctx, o.WorkerName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		active, msg := condition(u, "Active")
		why = msg
		return active, nil
	})
	if err != nil {
		return fmt.Errorf("Kueue did not reach the worker within %s: %s", o.Wait, why)
	}
	if err := readyToDispatch(ctx, dyn, conn.Kubeconfig, o.WorkerName, o.ClusterQueue, o.Wait); err != nil {
		return err
	}
	fmt.Fprintf(f.Out, "MultiKueue worker %s connected: JobSets of ClusterQueue %s now run there\n", o.WorkerName, o.ClusterQueue)
	return nil
}

// condition reports whether u's condition of type t is True, and its message.
func condition(u *unstructured.Unstructured, t string) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == t {
			msg, _ := m["message"].(string)
			return m["status"] == "True", msg
		}
	}
	return false, "no " + t + " condition yet"
}

// clients connects to the cluster and checks that it serves Kueue's API.
func clients(f *cli.Factory) (*rest.Config, kubernetes.Interface, error) {
	cfg, err := f.WorkloadConfig()
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := dc.ServerResourcesForGroupVersion(kueue.Group + "/v1beta2"); err != nil {
		return nil, nil, errors.New("the cluster does not serve Kueue's API (kueue.x-k8s.io/v1beta2): start the local cluster with `multislice up --kueue`, or install Kueue")
	}
	return cfg, client, nil
}
