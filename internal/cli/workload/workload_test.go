package workload

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/internal/workload"
)

// factory is a Factory whose kubeconfig's context has namespace team-a and
// whose workload commands talk to a fake client holding objs.
func factory(t *testing.T, objs ...client.Object) (*cli.Factory, *bytes.Buffer) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	fc := fake.NewClientBuilder().WithScheme(objcache.Scheme()).WithObjects(objs...).Build()
	return &cli.Factory{Streams: program.Streams{Out: &out, Err: &out}, HomeDir: t.TempDir(), ClientFlags: clientFlags(kubeconfig), ObjectClient: fc}, &out
}

func TestNewCmdCreateFillsOptions(t *testing.T) {
	f, _ := factory(t)
	var got *CreateOptions
	cmd := NewCmdCreate(f, func(_ context.Context, o *CreateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"train", "--tpu-type=v4-16", "--num-slices=2", "--command=python t.py", "--env", "XLA_FLAGS=--a=1,--b=2", "--dry-run", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if s.Name != "train" || s.TPUType != "v4-16" || s.Slices != 2 || s.Command != "python t.py" || s.Env["XLA_FLAGS"] != "--a=1,--b=2" ||
		!got.DryRun || got.Output != "json" || *s.TTLSecondsAfterFinished != 43200 {
		t.Errorf("options %+v", got)
	}
	if s.Namespace != "team-a" {
		t.Errorf("namespace %q, want the context's, team-a", s.Namespace)
	}
}

func TestCreateRun(t *testing.T) {
	f, out := factory(t)
	o := &CreateOptions{F: f, Spec: testSpec("train")}
	if err := createRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var js api.JobSet
	if err := f.ObjectClient.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "train"}, &js); err != nil {
		t.Fatalf("the JobSet was not created: %v", err)
	}
	if len(js.Spec.ReplicatedJobs) != 1 || js.Spec.ReplicatedJobs[0].Replicas != 2 {
		t.Errorf("created %+v", js.Spec.ReplicatedJobs)
	}
	if !strings.Contains(out.String(), "workload train created: 2 x v4-16 slices") {
		t.Errorf("output %q", out)
	}
	// Again: the error names the workload.
	if err := createRun(context.Background(), o); err == nil || !strings.Contains(err.Error(), "create workload train") {
		t.Errorf("second create: %v", err)
	}
}

func TestCreateRunDryRunWritesNothing(t *testing.T) {
	f, out := factory(t)
	if err := createRun(context.Background(), &CreateOptions{F: f, Spec: testSpec("train"), DryRun: true, Output: "yaml"}); err != nil {
		t.Fatal(err)
	}
	var list api.JobSetList
	_ = f.ObjectClient.List(context.Background(), &list)
	if len(list.Items) != 0 || !strings.Contains(out.String(), "kind: JobSet") {
		t.Errorf("dry run created %d JobSets, printed %q", len(list.Items), out)
	}
}

func TestListRun(t *testing.T) {
	restarted := testobj.NewJobSet("team-a", "b").ReplicatedJob("slice", 4, 2).Obj()
	restarted.Status.Restarts = 3
	restarted.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetStartupPolicyCompleted), Status: metav1.ConditionTrue}}
	objs := []client.Object{testobj.NewJobSet("team-a", "a").ReplicatedJob("slice", 2, 2).Obj(), restarted,
		testobj.NewJobSet("other", "c").ReplicatedJob("slice", 1, 1).Obj()}
	for _, tc := range []struct {
		output, want   string
		all, noHeaders bool
	}{
		{output: "table", want: "NAME\tSLICES"},
		{output: "name", want: "jobset.jobset.x-k8s.io/a\njobset.jobset.x-k8s.io/b\n"},
		{output: "jsonpath={range .items[*]}{.name}:{.restarts} {end}", want: "a:0 b:3 "},
		{output: "go-template={{range .items}}{{.namespace}}/{{.name}} {{end}}", all: true, want: "other/c team-a/a team-a/b "},
		{output: "custom-columns=NAME:.name", noHeaders: true, want: "a\nb\n"},
	} {
		f, out := factory(t, objs...)
		o := &ListOptions{F: f, Namespace: "team-a", AllNamespaces: tc.all, Output: cli.Output{Format: tc.output, NoHeaders: tc.noHeaders}}
		if err := listRun(context.Background(), o); err != nil {
			t.Fatalf("-o %s: %v", tc.output, err)
		}
		if tc.output == "table" {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[1], "a ") || !strings.Contains(lines[2], " 3 ") {
				t.Errorf("-o table:\n%s", out)
			}
			continue
		}
		if out.String() != tc.want {
			t.Errorf("-o %s: %q, want %q", tc.output, out, tc.want)
		}
	}
	// -A with --no-headers: kubectl's NAMESPACE column first, every namespace, no header.
	f, out := factory(t, objs...)
	if err := listRun(context.Background(), &ListOptions{F: f, AllNamespaces: true, Output: cli.Output{Format: "table", NoHeaders: true}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "other ") || !strings.HasPrefix(lines[1], "team-a ") || strings.Contains(out.String(), "NAME") {
		t.Errorf("-A --no-headers:\n%s", out)
	}
}

func TestDeleteRun(t *testing.T) {
	f, out := factory(t, testobj.NewJobSet("team-a", "a").ReplicatedJob("slice", 1, 1).Obj())
	if err := deleteRun(context.Background(), &DeleteOptions{F: f, Namespace: "team-a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := f.ObjectClient.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "a"}, &api.JobSet{}); err == nil {
		t.Error("the JobSet is still there")
	}
	if out.String() != "workload a deleted\n" {
		t.Errorf("output %q", out)
	}
	if err := deleteRun(context.Background(), &DeleteOptions{F: f, Namespace: "team-a", Name: "a"}); err == nil || !strings.Contains(err.Error(), "delete workload a") {
		t.Errorf("deleting it again: %v", err)
	}
}

func testSpec(name string) workload.Spec {
	return workload.Spec{Name: name, Namespace: "team-a", TPUType: "v4-16", Slices: 2, Command: "python t.py", Image: "python:3.12"}
}

// TestCreatePathways: xpk's flags fill the spec; the workload is refused,
// naming the pool and how to add it, on a cluster without cpu-np, and
// created once the pool is there.
func TestCreatePathways(t *testing.T) {
	f, out := factory(t)
	var got *PathwaysOptions
	cmd := NewCmdCreatePathways(f, func(_ context.Context, o *PathwaysOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--workload=pw", "--tpu-type=v5p-16", "--num-slices=4", "--headless", "--elastic-slices=1", "--max-slice-restarts=2",
		"--proxy-server-image=p:1", "--server-image=s:1", "--pathways-gcs-location=gs://b/tmp", "--priority=high", "--kueue-queue=q"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if s.Name != "pw" || s.TPUType != "v5p-16" || s.Slices != 4 || !s.Headless || s.ElasticSlices != 1 || s.MaxSliceRestarts != 2 ||
		s.ProxyImage != "p:1" || s.ServerImage != "s:1" || s.GCSLocation != "gs://b/tmp" || s.Priority != "high" || s.QueueName != "q" || s.Namespace != "team-a" {
		t.Errorf("spec %+v", s)
	}

	o := &PathwaysOptions{F: f, Spec: workload.PathwaysSpec{Name: "pw", Namespace: "team-a", TPUType: "v4-16", Slices: 2, Command: "python t.py"}}
	err := createPathwaysRun(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "node pool cpu-np") || !strings.Contains(err.Error(), "multislice nodepool create cpu-np") {
		t.Fatalf("no cpu-np: error %v, want one naming the pool and how to add it", err)
	}
	cpu := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-np-0", Labels: map[string]string{"cloud.google.com/gke-nodepool": "cpu-np"}}}
	f, out = factory(t, cpu)
	o.F = f
	if err := createPathwaysRun(context.Background(), o); err != nil || !strings.Contains(out.String(), "workload pw created") {
		t.Fatalf("with cpu-np: %v, %q", err, out.String())
	}
}

// clientFlags name kubeconfig, as --kubeconfig does.
func clientFlags(kubeconfig string) *genericclioptions.ConfigFlags {
	c := cli.NewClientFlags()
	*c.KubeConfig = kubeconfig
	return c
}

// TestCompleteNames: a JobSet name argument completes from the namespace,
// as kubectl's resource names do.
func TestCompleteNames(t *testing.T) {
	f, _ := factory(t, testobj.NewJobSet("team-a", "train").ReplicatedJob("slice", 1, 1).Obj(),
		testobj.NewJobSet("team-a", "tune").ReplicatedJob("slice", 1, 1).Obj(), testobj.NewJobSet("team-a", "eval").ReplicatedJob("slice", 1, 1).Obj(),
		testobj.NewJobSet("other", "trial").ReplicatedJob("slice", 1, 1).Obj())
	cmd := NewCmdDelete(f, nil)
	if err := cmd.Flags().Set("namespace", "team-a"); err != nil {
		t.Fatal(err)
	}
	cmd.SetContext(context.Background())
	got, _ := cmd.ValidArgsFunction(cmd, nil, "t")
	if strings.Join(got, ",") != "train,tune" {
		t.Errorf("completing %q: %v, want train,tune", "t", got)
	}
	if got, _ := cmd.ValidArgsFunction(cmd, []string{"train"}, ""); got != nil {
		t.Errorf("a second argument completes to %v", got)
	}
}
