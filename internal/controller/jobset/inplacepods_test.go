package jobset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/testobj"
)

func inPlacePod(name string, edits ...func(*corev1.Pod)) *corev1.Pod {
	p := testobj.NewPod("ns", name).Label(api.JobSetNameKey, "js").Attempt(0).Edit(func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "main"}}}
	}).Obj()
	for _, e := range edits {
		e(p)
	}
	return p
}

func atAttempt(n string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations[api.InPlaceRestartAttemptKey] = n }
}

func TestInPlacePods(t *testing.T) {
	js := types.NamespacedName{Namespace: "ns", Name: "js"}
	restarted := func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = 1 }
	for _, tc := range []struct {
		name  string
		steps []func(*inPlacePods) (types.NamespacedName, bool)
		// moved: what the last step reports; want: the pods read at attempt "0".
		moved bool
		want  []policy.InPlacePod
	}{
		{"a new pod with no attempt does not move the restart",
			steps(set(inPlacePod("b"))), false, []policy.InPlacePod{{Name: "b"}}},
		{"a new pod with an attempt does",
			steps(set(inPlacePod("b", atAttempt("0")))), true, []policy.InPlacePod{{Name: "b", Attempt: ptr.To[int32](0)}}},
		{"the agent's annotation moves it",
			steps(set(inPlacePod("a")), set(inPlacePod("a", atAttempt("1")))), true, []policy.InPlacePod{{Name: "a", Attempt: ptr.To[int32](1)}}},
		{"a container restart moves it",
			steps(set(inPlacePod("a", atAttempt("1"))), set(inPlacePod("a", atAttempt("1"), restarted))), true,
			[]policy.InPlacePod{{Name: "a", Attempt: ptr.To[int32](1), Restarts: 1}}},
		{"a heartbeat of the same facts does not",
			steps(set(inPlacePod("a", atAttempt("1"))), set(inPlacePod("a", atAttempt("1")))), false, []policy.InPlacePod{{Name: "a", Attempt: ptr.To[int32](1)}}},
		{"sorted by name; pods going, not started or of another recreate attempt left out",
			steps(set(inPlacePod("c")), set(inPlacePod("a")),
				set(inPlacePod("going", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} })),
				set(inPlacePod("pending", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })),
				set(inPlacePod("old", func(p *corev1.Pod) { p.Labels[api.RestartsKey] = "1" }))),
			false, []policy.InPlacePod{{Name: "a"}, {Name: "c"}}},
		{"a pod gone with an attempt moves it",
			steps(set(inPlacePod("a", atAttempt("0"))), set(inPlacePod("b")), del(inPlacePod("a", atAttempt("0")))), true, []policy.InPlacePod{{Name: "b"}}},
		{"a pod of no JobSet is not indexed",
			steps(set(inPlacePod("x", atAttempt("0"), func(p *corev1.Pod) { delete(p.Labels, api.JobSetNameKey) }))), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := &inPlacePods{}
			var moved bool
			for _, step := range tc.steps {
				_, moved = step(idx)
			}
			if moved != tc.moved {
				t.Errorf("moved = %v, want %v", moved, tc.moved)
			}
			got := idx.pods(js, "0")
			if len(got) != len(tc.want) {
				t.Fatalf("pods = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Name != tc.want[i].Name || got[i].Restarts != tc.want[i].Restarts || !ptr.Equal(got[i].Attempt, tc.want[i].Attempt) {
					t.Errorf("pods[%d] = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestInPlacePodsAnswerFollowsChanges: the answer kept between reconciles
// is dropped when a pod changes, comes or goes.
func TestInPlacePodsAnswerFollowsChanges(t *testing.T) {
	js := types.NamespacedName{Namespace: "ns", Name: "js"}
	idx := &inPlacePods{}
	idx.set(inPlacePod("a"))
	idx.set(inPlacePod("b"))
	attempts := func() string {
		var out []string
		for _, p := range idx.pods(js, "0") {
			a := "-"
			if p.Attempt != nil {
				a = fmt.Sprint(*p.Attempt)
			}
			out = append(out, p.Name+":"+a)
		}
		return strings.Join(out, " ")
	}
	for _, step := range []struct {
		do   func()
		want string
	}{
		{func() {}, "a:- b:-"},
		{func() {}, "a:- b:-"},
		{func() { idx.set(inPlacePod("b", atAttempt("1"))) }, "a:- b:1"},
		{func() { idx.set(inPlacePod("c", atAttempt("1"))) }, "a:- b:1 c:1"},
		{func() { idx.delete(inPlacePod("a")) }, "b:1 c:1"},
		{func() {
			idx.set(inPlacePod("b", atAttempt("1"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }))
		}, "c:1"},
	} {
		step.do()
		if got := attempts(); got != step.want {
			t.Errorf("pods = %q, want %q", got, step.want)
		}
	}
}

func steps(s ...func(*inPlacePods) (types.NamespacedName, bool)) []func(*inPlacePods) (types.NamespacedName, bool) {
	return s
}

func set(p *corev1.Pod) func(*inPlacePods) (types.NamespacedName, bool) {
	return func(c *inPlacePods) (types.NamespacedName, bool) { return c.set(p) }
}

func del(p *corev1.Pod) func(*inPlacePods) (types.NamespacedName, bool) {
	return func(c *inPlacePods) (types.NamespacedName, bool) { return c.delete(p) }
}

func TestAgentStarted(t *testing.T) {
	withAttempt := map[string]string{api.InPlaceRestartAttemptKey: "2"}
	for _, tc := range []struct {
		name        string
		phase       corev1.PodPhase
		node        string
		annotations map[string]string
		want        bool
	}{
		{"running", corev1.PodRunning, "n", nil, true},
		{"pending at the barrier (real kubelet)", corev1.PodPending, "n", withAttempt, true},
		{"pending, agent not started", corev1.PodPending, "n", nil, false},
		{"pending, not scheduled", corev1.PodPending, "", withAttempt, false},
		{"failed", corev1.PodFailed, "n", withAttempt, false},
		{"succeeded", corev1.PodSucceeded, "n", withAttempt, false},
	} {
		p := &corev1.Pod{}
		p.Status.Phase, p.Spec.NodeName, p.Annotations = tc.phase, tc.node, tc.annotations
		if got := agentStarted(p); got != tc.want {
			t.Errorf("%s: agentStarted %v, want %v", tc.name, got, tc.want)
		}
	}
}
