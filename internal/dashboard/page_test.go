package dashboard

import (
	"bytes"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/testobj"
)

func TestBuildAndRender(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	running := api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train"}}
	waiting := func(name string, since int) api.JobSet {
		created := metav1.NewTime(now.Add(time.Duration(since) * time.Second))
		return api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: created}, Status: api.JobSetStatus{Conditions: []metav1.Condition{{
			Type: string(api.JobSetTopologyAssigned), Status: metav1.ConditionFalse, Reason: "InsufficientCapacity",
			Message: "needs 4 free node pools", LastTransitionTime: metav1.NewTime(now.Add(time.Duration(since) * time.Second))}}}}
	}
	labels := map[string]string{api.JobSetNameKey: "train", "job-name": "train-slice-0", api.JobIndexKey: "0"}
	pod := func(name, idx string, phase corev1.PodPhase) corev1.Pod {
		b := testobj.NewPod("ns", name).Annotation(batchv1.JobCompletionIndexAnnotation, idx).On("n-"+idx, phase)
		for k, v := range labels {
			b.Label(k, v)
		}
		return *b.Obj()
	}
	urgent := waiting("urgent", 30) // the newest, and of the highest priority: first
	urgent.Spec.ReplicatedJobs = []api.ReplicatedJob{{Name: "slice", Replicas: 2}}
	urgent.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = "high"
	page := Build(Snapshot{
		JobSets:         []api.JobSet{waiting("late", 20), running, waiting("early", 10), urgent},
		PriorityClasses: []schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 750}},
		Jobs:            []batchv1.Job{*testobj.NewJob("ns", "train-slice-0").OfJobSet("train", "slice", 0).Label("job-name", "train-slice-0").Obj()},
		Pods:            []corev1.Pod{pod("p0", "0", corev1.PodRunning), pod("p1", "1", corev1.PodPending)},
		Events: []corev1.Event{{InvolvedObject: corev1.ObjectReference{Namespace: "ns", Name: "train"}, Type: "Warning",
			Reason: "SliceUnhealthy", Message: "host lost", EventTime: metav1.NewMicroTime(now)}},
		Now: now,
	})
	if len(page.Queue) != 3 || page.Queue[0].Name != "urgent" || page.Queue[0].Priority != 750 || page.Queue[1].Name != "early" || page.Queue[2].Name != "late" || page.Summary.Waiting != 3 {
		t.Errorf("queue = %+v, want urgent (priority 750), then early, then late", page.Queue)
	}
	var train Workload
	for _, w := range page.Workloads {
		if w.Name == "train" {
			train = w
		}
	}
	if train.Running != 1 || train.Workers != 2 || len(train.Timeline) != 1 || train.Timeline[0].Kind != "fault" {
		t.Errorf("train = %d/%d running, timeline %+v", train.Running, train.Workers, train.Timeline)
	}
	var r renderer
	sections, err := r.render(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(assemble(sections))
	for _, want := range []string{`data-jobset="ns/train"`, `data-phase="Running"`, `data-waiting="ns/early"`, `data-kind="fault"`, "host lost"} {
		if !strings.Contains(html, want) {
			t.Errorf("rendered page lacks %s", want)
		}
	}
	// A JobSet that did not change is not rendered again.
	before := sections[len(sections)-1].html
	page.Workloads[len(page.Workloads)-1].Running = 99
	again, _ := r.render(page)
	if &again[len(again)-2].html[0] != &sections[len(sections)-2].html[0] || bytes.Equal(again[len(again)-1].html, before) {
		t.Error("want the unchanged JobSet's HTML reused and the changed one rendered anew")
	}
	empty, err := (&renderer{}).render(Build(Snapshot{Now: now}))
	if err != nil || !strings.Contains(string(assemble(empty)), "no JobSet") {
		t.Errorf("empty page: %v\n%s", err, assemble(empty))
	}
}

// TestPathwaysHeadApart: Pathways' head (its pods request no TPU) is drawn
// apart from the slices and does not count as a worker.
func TestPathwaysHeadApart(t *testing.T) {
	js := api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pw"}}
	job := func(name, rjob, global string, tpu bool) batchv1.Job {
		j := *testobj.NewJob("ns", name).OfJobSet("pw", rjob, 0).Label(api.JobGlobalIndexKey, global).Obj()
		j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c"}}
		if tpu {
			j.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"google.com/tpu": resource.MustParse("4")}
		}
		return j
	}
	pod := func(name, jobName string) corev1.Pod {
		return *testobj.NewPod("ns", name).OfJob(jobName, 0).Label(api.JobSetNameKey, "pw").On("", corev1.PodRunning).Obj()
	}
	page := Build(Snapshot{JobSets: []api.JobSet{js},
		Jobs: []batchv1.Job{job("pw-pathways-head-0", "pathways-head", "0", false), job("pw-worker-0", "worker", "1", true)},
		Pods: []corev1.Pod{pod("h", "pw-pathways-head-0"), pod("w", "pw-worker-0")}, Now: time.Now()})
	if w := page.Workloads[0]; w.Workers != 1 || len(w.Others) != 1 {
		t.Fatalf("workers %d, others %+v: want the worker counted, the head apart", w.Workers, w.Others)
	}
	var r renderer
	sections, err := r.render(page)
	if err != nil {
		t.Fatal(err)
	}
	if html := string(assemble(sections)); !strings.Contains(html, `data-other="pw-pathways-head-0"`) || !strings.Contains(html, "not a slice") {
		t.Errorf("the head is not drawn apart")
	}
}

// TestQueuedJobSetShowsItsWorkload: a JobSet in a Kueue queue shows where
// its Workload stands, and why.
func TestQueuedJobSetShowsItsWorkload(t *testing.T) {
	js := api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q", UID: "u1", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "lq"}}}
	w := unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "jobset-q-1", "namespace": "ns",
			"ownerReferences": []any{map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "q", "uid": "u1"}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "QuotaReserved", "status": "False", "reason": "Pending",
			"message": "couldn't assign flavors", "lastTransitionTime": "2026-12-05T07:00:00Z"}}},
	}}
	page := Build(Snapshot{JobSets: []api.JobSet{js}, KueueWorkloads: []unstructured.Unstructured{w}, Now: time.Now()})
	k := page.Workloads[0].Kueue
	if k == nil || k.State != "pending" || !strings.Contains(k.Why, "couldn't assign flavors") {
		t.Fatalf("kueue admission %+v", k)
	}
	sections, err := (&renderer{}).render(page)
	if err != nil {
		t.Fatal(err)
	}
	var html string
	for _, s := range sections {
		html += string(s.html)
	}
	if !strings.Contains(html, `data-kueue="pending"`) || !strings.Contains(html, "Workload jobset-q-1 in LocalQueue lq: pending") {
		t.Errorf("the page does not show the Workload:\n%s", html)
	}
}
