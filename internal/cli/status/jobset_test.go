package status

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/testobj"
)

// cluster is a fake cluster with JobSet "train" (two slices of two
// workers) running in namespace team-a: its Jobs, pods and one event.
func cluster(t *testing.T) (*cli.Factory, *bytes.Buffer) {
	t.Helper()
	js := testobj.NewJobSet("team-a", "train").ReplicatedJob("slice", 2, 2).Obj()
	objs := []client.Object{js}
	for s := range 2 {
		job := testobj.NewJob("team-a", fmt.Sprintf("train-slice-%d", s)).OfJobSet("train", "slice", s).Attempt(0).
			PinnedTo(gke.NodePoolLabel, fmt.Sprintf("np-%d", s)).Obj()
		objs = append(objs, job)
		for w := range 2 {
			objs = append(objs, testobj.NewPod("team-a", fmt.Sprintf("%s-%d-x", job.Name, w)).OfJob(job.Name, w).
				Label(api.JobSetNameKey, "train").Attempt(0).On("host", corev1.PodRunning).Obj())
		}
	}
	objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "e1"},
		InvolvedObject: corev1.ObjectReference{Kind: "JobSet", Namespace: "team-a", Name: "train"},
		Reason:         "DomainsAssigned", Message: "each child Job has its own pool", Type: corev1.EventTypeNormal,
		LastTimestamp: metav1.NewTime(time.Now())})
	fc := fake.NewClientBuilder().WithScheme(objcache.Scheme()).WithObjects(objs...).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		Build()
	var out bytes.Buffer
	return &cli.Factory{Streams: program.Streams{Out: &out, Err: &out}, HomeDir: t.TempDir(), ObjectClient: fc}, &out
}

func TestJobSetRunTables(t *testing.T) {
	f, out := cluster(t)
	if err := jobSetRun(context.Background(), &Options{F: f, JobSet: "train", Namespace: "team-a"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"JobSet team-a/train", "slice-0", "slice-1", "train-slice-1-1-x", "Running"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

func TestJobSetRunObjectFormats(t *testing.T) {
	for _, tc := range []struct{ output, want string }{
		{"name", "jobset.jobset.x-k8s.io/train\n"},
		{"jsonpath={.name}/{.namespace}", "train/team-a"},
		{"go-template={{.name}} in {{.namespace}}", "train in team-a"},
	} {
		f, out := cluster(t)
		if err := jobSetRun(context.Background(), &Options{F: f, JobSet: "train", Namespace: "team-a", Output: cli.Output{Format: tc.output}}); err != nil {
			t.Fatalf("-o %s: %v", tc.output, err)
		}
		if out.String() != tc.want {
			t.Errorf("-o %s: %q, want %q", tc.output, out, tc.want)
		}
	}
}

// TestJobSetRunWatchIntoAPipe: -w into a pipe writes framed tables and no
// terminal control codes.
func TestJobSetRunWatchIntoAPipe(t *testing.T) {
	f, out := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := jobSetRun(ctx, &Options{F: f, JobSet: "train", Namespace: "team-a", Watch: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\033") || !strings.HasPrefix(out.String(), "--- ") {
		t.Errorf("watch into a pipe wrote:\n%q", out)
	}
}

func TestJobSetRunNotFound(t *testing.T) {
	f, _ := cluster(t)
	err := jobSetRun(context.Background(), &Options{F: f, JobSet: "nope", Namespace: "team-a"})
	if err == nil || !strings.Contains(err.Error(), "jobset team-a/nope") {
		t.Errorf("err = %v", err)
	}
}

func TestNewCmdStatusFillsOptions(t *testing.T) {
	f, _ := cluster(t)
	f.ClientFlags = cli.NewClientFlags()
	*f.ClientFlags.KubeConfig = "/nonexistent"
	var got *Options
	cmd := NewCmdStatus(f, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"train", "-n", "team-b", "-w", "-o", "wide", "--no-headers"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.JobSet != "train" || got.Namespace != "team-b" || !got.Watch || got.Output != (cli.Output{Format: "wide", NoHeaders: true}) {
		t.Errorf("options %+v", got)
	}
	cmd = NewCmdStatus(f, func(context.Context, *Options) error { return nil })
	cmd.SetArgs([]string{"-w"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "name it") {
		t.Errorf("-w without a JobSet: %v", err)
	}
}
