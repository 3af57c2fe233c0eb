package logs

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/internal/view"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Slice: -1, Worker: -1, Attempt: -1}, ""},
		{Options{Slice: 1, Worker: 0, Attempt: 2, Follow: true}, ""},
		{Options{Slice: -2, Worker: -1, Attempt: -1}, "--slice -2"},
		{Options{Slice: -1, Worker: -3, Attempt: -1}, "--worker -3"},
		{Options{Slice: -1, Worker: -1, Attempt: -5}, "--attempt -5"},
		{Options{Slice: -1, Worker: -1, Attempt: -1, Previous: true, Follow: true}, "--previous with --follow"},
		{Options{Slice: -1, Worker: -1, Attempt: 1, Previous: true}, "--previous with --attempt"},
	} {
		err := tc.o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: err = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestSelects(t *testing.T) {
	pod := func(slice, worker, attempt string) *corev1.Pod {
		return testobj.NewPod("", "p").Label(api.JobGlobalIndexKey, slice).Label(api.RestartsKey, attempt).
			Annotation(batchv1.JobCompletionIndexAnnotation, worker).Obj()
	}
	for _, tc := range []struct {
		o          Options
		pod        *corev1.Pod
		minAttempt int
		want       bool
	}{
		{Options{Slice: -1, Worker: -1}, pod("3", "1", "0"), 0, true},
		{Options{Slice: 1, Worker: 0}, pod("1", "0", "0"), 0, true},
		{Options{Slice: 1, Worker: 0}, pod("1", "1", "0"), 0, false},
		{Options{Slice: 1, Worker: 0}, pod("2", "0", "0"), 0, false},
		{Options{Slice: 1, Worker: -1}, pod("1", "1", "1"), 0, false},              // an other attempt
		{Options{Slice: 1, Worker: -1, Follow: true}, pod("1", "1", "3"), 1, true}, // following: later attempts too
		{Options{Slice: 1, Worker: -1, Follow: true}, pod("1", "1", "0"), 1, false},
	} {
		if got := tc.o.Selects(view.PodWorkerOf(tc.pod), tc.minAttempt); got != tc.want {
			t.Errorf("%+v on %v (min attempt %d) = %v, want %v", tc.o, view.PodWorkerOf(tc.pod), tc.minAttempt, got, tc.want)
		}
	}
	w := view.PodWorkerOf(pod("1", "0", "2"))
	if got := w.Prefix(); got != "[slice-1/worker-0 attempt-2] " {
		t.Errorf("prefix = %q", got)
	}
	w.InPlace = "3"
	if got := w.Prefix(); got != "[slice-1/worker-0 attempt-2/3] " {
		t.Errorf("prefix with an in-place attempt = %q", got)
	}
}

// factory is a Factory whose workload cluster is two fakes: js in a
// controller-runtime client, pods in a clientset (whose log stream says
// "fake logs", one line per container instance).
func factory(t *testing.T, js *api.JobSet, pods ...runtime.Object) (*cli.Factory, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	objs := fake.NewClientBuilder().WithScheme(objcache.Scheme()).WithObjects(js).WithStatusSubresource(js).Build()
	return &cli.Factory{Streams: program.Streams{Out: &out, Err: &out}, HomeDir: t.TempDir(), ObjectClient: objs, WorkloadClient: kubefake.NewClientset(pods...)}, &out
}

// workerPod is pod of slice and worker at attempt, Running.
func workerPod(slice, worker, attempt int) *corev1.Pod {
	return testobj.NewPod("default", fmt.Sprintf("train-slice-%d-%d-%d", slice, worker, attempt)).
		Label(api.JobSetNameKey, "train").Label(api.JobGlobalIndexKey, strconv.Itoa(slice)).Attempt(attempt).
		Annotation(batchv1.JobCompletionIndexAnnotation, strconv.Itoa(worker)).Containers("main").
		Edit(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
		}).Obj()
}

func run(t *testing.T, f *cli.Factory, args ...string) error {
	t.Helper()
	cmd := NewCmdLogs(f, nil)
	cmd.SetArgs(args)
	cmd.SetOut(f.Out)
	cmd.SetErr(f.Out)
	cmd.SilenceUsage = true
	return cmd.Execute()
}

func TestNewCmdLogsFillsOptions(t *testing.T) {
	var got *Options
	cmd := NewCmdLogs(&cli.Factory{HomeDir: t.TempDir()}, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"train", "-n", "team-a", "--slice", "1", "--worker=0", "-c", "main", "-f", "--attempt", "2", "--timestamps"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.JobSet != "train" || got.Namespace != "team-a" || got.Slice != 1 || got.Worker != 0 || got.Container != "main" ||
		!got.Follow || got.Attempt != 2 || got.Previous || !got.Timestamps {
		t.Errorf("options %+v", got)
	}
}

// Which pods' logs are read, in what order, with what prefix.
func TestLogsRun(t *testing.T) {
	js := testobj.NewJobSet("default", "train").ReplicatedJob("slice", 2, 2).Edit(func(js *api.JobSet) { js.Status.Restarts = 1 }).Obj()
	pods := []runtime.Object{workerPod(1, 1, 1), workerPod(0, 0, 1), workerPod(1, 0, 1), workerPod(0, 1, 1), workerPod(0, 0, 0)}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train"}, "[slice-0/worker-0 attempt-1] fake logs\n[slice-0/worker-1 attempt-1] fake logs\n" +
			"[slice-1/worker-0 attempt-1] fake logs\n[slice-1/worker-1 attempt-1] fake logs\n"},
		{[]string{"train", "--slice=1", "--worker=0"}, "[slice-1/worker-0 attempt-1] fake logs\n"},
		{[]string{"train", "--attempt=0"}, "[slice-0/worker-0 attempt-0] fake logs\n"},
	} {
		f, out := factory(t, js, pods...)
		if err := run(t, f, tc.args...); err != nil {
			t.Errorf("%v: %v", tc.args, err)
		}
		if out.String() != tc.want {
			t.Errorf("%v printed\n%s\nwant\n%s", tc.args, out.String(), tc.want)
		}
	}
}

// Following ends once the JobSet has finished and the streams are in.
func TestLogsFollowEndsWithTheJobSet(t *testing.T) {
	js := testobj.NewJobSet("default", "train").ReplicatedJob("slice", 1, 1).Edit(func(js *api.JobSet) { js.Status.TerminalState = string(api.JobSetCompleted) }).Obj()
	f, out := factory(t, js, workerPod(0, 0, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := NewCmdLogs(f, nil)
	cmd.SetArgs([]string{"train", "-f"})
	if err := cmd.ExecuteContext(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("follow: %v (context: %v)", err, ctx.Err())
	}
	if got := out.String(); got != "[slice-0/worker-0 attempt-0] fake logs\n" {
		t.Errorf("follow printed %q", got)
	}
}

func TestLogsRefusals(t *testing.T) {
	js := testobj.NewJobSet("default", "train").ReplicatedJob("slice", 2, 2).Obj()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"other"}, "no JobSet other in namespace default: list them with `multislice workload list -n default`"},
		{[]string{"train", "--slice=2"}, "--slice 2: JobSet train has slices 0..1"},
		{[]string{"train", "--worker=-2"}, "--worker -2: a worker index is 0 or more"},
		{[]string{"train"}, "no pod of JobSet train matches (slice any, worker any, attempt 0)"},
	} {
		f, _ := factory(t, js)
		if err := run(t, f, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
