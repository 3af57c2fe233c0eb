package chaos

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// factory is a Factory whose local cluster is a fake clientset holding a
// simulated cloud with one v4 2x2x2 pool, "pool-a" (2 hosts of 8 allowed).
func factory(t *testing.T) (*cli.Factory, *fake.Clientset, *bytes.Buffer) {
	t.Helper()
	ctx := context.Background()
	client := fake.NewClientset()
	c, err := cloud.Init(ctx, client, cloud.Settings{Quota: map[string]int{"tpu-v4-podslice": 8}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePool(ctx, fleet.Pool{Name: "pool-a", MachineType: "ct4p-hightpu-4t", Accelerator: "tpu-v4-podslice", Topology: "2x2x2"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	return &cli.Factory{Streams: program.Streams{Out: &out, Err: &out}, HomeDir: t.TempDir(), LocalClient: client}, client, &out
}

func run(f *cli.Factory, args ...string) error {
	cmd := NewCmdChaos(f)
	cmd.SetArgs(args)
	cmd.SetOut(f.Out)
	cmd.SetErr(f.Out)
	cmd.SilenceUsage = true
	return cmd.Execute()
}

func node(t *testing.T, client *fake.Clientset, name string) *corev1.Node {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNewCmdFaultFillsOptions(t *testing.T) {
	f, _, _ := factory(t)
	var got *FaultOptions
	cmd := NewCmdFault(f, cloud.FaultHost, func(_ context.Context, o *FaultOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--nodepool=pool-a", "--host=1"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Kind != cloud.FaultHost || got.Pool != "pool-a" || got.Host != 1 {
		t.Errorf("options %+v", got)
	}
}

// Each fault does to the pool's nodes what the cloud's event would.
func TestFaults(t *testing.T) {
	t.Run("maintenance", func(t *testing.T) {
		f, client, out := factory(t)
		if err := run(f, "maintenance", "--nodepool=pool-a"); err != nil {
			t.Fatal(err)
		}
		for h := range 2 {
			n := node(t, client, fleet.NodeName("pool-a", h))
			if n.Labels[gke.ActiveMaintenanceLabel] != "ONGOING" || !hasTaint(n, gke.ImpendingTerminationTaint) {
				t.Errorf("host %d: labels %v, taints %v", h, n.Labels, n.Spec.Taints)
			}
		}
		if !strings.Contains(out.String(), "2 hosts of pool-a are under maintenance") {
			t.Errorf("printed %q", out.String())
		}
	})
	t.Run("fail-host", func(t *testing.T) {
		f, client, _ := factory(t)
		if err := run(f, "fail-host", "--nodepool=pool-a", "--host=1"); err != nil {
			t.Fatal(err)
		}
		n := node(t, client, fleet.NodeName("pool-a", 1))
		if n.Labels[cloud.FaultLabel] != cloud.FaultHost || n.Annotations[fleet.KwokNodeAnnotation] != "" {
			t.Errorf("host 1 not failed (kwok would still play its kubelet): labels %v, annotations %v", n.Labels, n.Annotations)
		}
	})
	t.Run("preempt", func(t *testing.T) {
		f, client, _ := factory(t)
		if err := run(f, "preempt", "--nodepool=pool-a"); err != nil {
			t.Fatal(err)
		}
		if l, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
			t.Errorf("%d hosts left after preemption", len(l.Items))
		}
	})
	t.Run("capacity", func(t *testing.T) {
		f, _, out := factory(t)
		if err := run(f, "capacity", "--unavailable=6"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "6 tpu-v4-podslice hosts unavailable") {
			t.Errorf("printed %q", out.String())
		}
	})
}

// Refusals name the flag and the fix.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"maintenance"}, "--nodepool is required"},
		{[]string{"preempt", "--nodepool=nope"}, "nope"},
		{[]string{"fail-host", "--nodepool=pool-a", "--host=2"}, "--host 2: pool pool-a has hosts 0 to 1"},
		{[]string{"capacity", "--unavailable=-1"}, "--unavailable must not be negative"},
		{[]string{"capacity", "--accelerator=tpu-v9", "--unavailable=1"}, `--accelerator "tpu-v9"`},
		{[]string{"capacity", "--unavailable=9"}, "use 0 to 8"},
	} {
		f, client, _ := factory(t)
		before := []*corev1.Node{node(t, client, fleet.NodeName("pool-a", 0)), node(t, client, fleet.NodeName("pool-a", 1))}
		if err := run(f, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to say %q", tc.args, err, tc.want)
		}
		for h := range 2 {
			if n := node(t, client, fleet.NodeName("pool-a", h)); !equality.Semantic.DeepEqual(n, before[h]) {
				t.Errorf("%v: host %d changed", tc.args, h)
			}
		}
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
