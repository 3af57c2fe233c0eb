package nodepool

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
)

// factory is a Factory whose local cluster is a fake clientset holding a
// simulated cloud with room for 8 v4 hosts.
func factory(t *testing.T) (*cli.Factory, *fake.Clientset, *bytes.Buffer) {
	t.Helper()
	client := fake.NewClientset()
	if _, err := cloud.Init(context.Background(), client, cloud.Settings{Quota: map[string]int{"tpu-v4-podslice": 8}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	return &cli.Factory{Streams: program.Streams{Out: &out, Err: &out}, HomeDir: t.TempDir(), LocalClient: client}, client, &out
}

// run executes a command line against f.
func run(t *testing.T, f *cli.Factory, args ...string) error {
	t.Helper()
	cmd := NewCmdNodepool(f)
	cmd.SetArgs(args)
	cmd.SetOut(f.Out)
	cmd.SetErr(f.Out)
	cmd.SilenceUsage = true
	return cmd.Execute()
}

func nodes(t *testing.T, client *fake.Clientset, selector string) []corev1.Node {
	t.Helper()
	l, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestNewCmdCreateFillsOptions(t *testing.T) {
	f, _, _ := factory(t)
	var got *CreateOptions
	cmd := NewCmdCreate(f, func(_ context.Context, o *CreateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"pool-a", "--machine-type=ct4p-hightpu-4t", "--tpu-topology=2x2x2", "--node-labels=MultisliceGroup=g,MultisliceGroupSize=2",
		"--region=us-central2", "--wait=0"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Name != "pool-a" || got.MachineType != "ct4p-hightpu-4t" || got.TPUTopology != "2x2x2" || got.NodeLabels["MultisliceGroupSize"] != "2" || got.Wait != 0 {
		t.Errorf("options %+v", got)
	}
}

// create, update, list, status and delete, one after the other, against
// the fake cluster: what each writes and prints.
func TestPoolLifecycle(t *testing.T) {
	f, client, out := factory(t)
	if err := run(t, f, "create", "pool-a", "--machine-type=ct4p-hightpu-4t", "--tpu-topology=2x2x2", "--wait=0"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "Created node pool pool-a: v4-16 (tpu-v4-podslice 2x2x2: 2 hosts of 4 chips)") {
		t.Errorf("create printed %q", got)
	}
	if n := nodes(t, client, gke.NodePoolLabel+"=pool-a"); len(n) != 2 || n[0].Labels[gke.TopologyLabel] != "2x2x2" {
		t.Fatalf("nodes of pool-a: %d, labels %v", len(n), n)
	}

	out.Reset()
	if err := run(t, f, "update", "pool-a", "--node-labels=team=a"); err != nil {
		t.Fatal(err)
	}
	if len(nodes(t, client, "team=a")) != 2 || !strings.Contains(out.String(), "Updated node pool pool-a: labels team=a.") {
		t.Errorf("update: nodes not labelled or printed %q", out.String())
	}

	out.Reset()
	if err := run(t, f, "list", "-o", "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"pool-a"`) {
		t.Errorf("list -o json: %s", out.String())
	}

	out.Reset()
	if err := run(t, f, "status", "-l", "team=a", "-o", "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Nodes, ReadyNodes int }
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Nodes != 2 || doc.ReadyNodes != 0 {
		t.Errorf("status -o json = %+v, %v (nodes not Ready: nothing plays kubelet here)\n%s", doc, err, out.String())
	}

	out.Reset()
	if err := run(t, f, "delete", "pool-a"); err != nil {
		t.Fatal(err)
	}
	if n := nodes(t, client, gke.NodePoolLabel+"=pool-a"); len(n) != 0 || !strings.Contains(out.String(), "Deleted node pool pool-a.") {
		t.Errorf("after delete: %d nodes left, printed %q", len(n), out.String())
	}
}

// Refusals name the flag and the fix, and write nothing.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "p", "--machine-type=ct4p-hightpu-4t"}, "--tpu-topology is required"},
		{[]string{"create", "p", "--machine-type=e2-standard-8", "--num-nodes=100000"}, "--num-nodes: must be 0 to"},
		{[]string{"create", "p", "--machine-type=ct4p-hightpu-4t", "--tpu-topology=4x4x4", "--wait=0"}, "no capacity for node pool p"},
		{[]string{"update", "p"}, "--node-labels is required"},
		{[]string{"delete", "nope"}, "nope"},
		{[]string{"status", "-o", "wide"}, `-o "wide": use json or yaml`},
	} {
		f, client, _ := factory(t)
		err := run(t, f, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to say %q", tc.args, err, tc.want)
		}
		if n := nodes(t, client, ""); len(n) != 0 {
			t.Errorf("%v: %d nodes written", tc.args, len(n))
		}
	}
}

// Without a simulated cloud (any other cluster) the commands say so.
func TestNoCloud(t *testing.T) {
	var out bytes.Buffer
	f := &cli.Factory{Streams: program.Streams{Out: &out, Err: &out}, HomeDir: t.TempDir(), LocalClient: fake.NewClientset()}
	err := listRun(context.Background(), &ListOptions{F: f})
	if err == nil || !strings.Contains(err.Error(), "no simulated TPU cloud") {
		t.Errorf("list on a cluster with no cloud: %v", err)
	}
}
