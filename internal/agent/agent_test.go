package agent

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

func TestNext(t *testing.T) {
	inPlace := func(current, previous *int32) *api.JobSet {
		js := &api.JobSet{Spec: api.JobSetSpec{FailurePolicy: &api.FailurePolicy{RestartStrategy: api.InPlaceRestart}}}
		js.Status.CurrentInPlaceRestartAttempt, js.Status.PreviousInPlaceRestartAttempt = current, previous
		return js
	}
	disabled := inPlace(nil, nil)
	disabled.Annotations = map[string]string{api.DisableInPlaceRestartKey: "true"}
	n := func(v int32) *int32 { return ptr.To(v) }
	cases := []struct {
		name   string
		state  State
		js     *api.JobSet
		action Action
		value  int32
	}{
		{"first start of the JobSet", State{}, inPlace(nil, nil), Annotate, 0},
		{"start after a restart joins the next attempt", State{}, inPlace(n(3), n(2)), Annotate, 4},
		{"waits at the barrier", State{Attempt: n(4)}, inPlace(n(3), n(3)), Wait, 0},
		{"released with the current attempt", State{Attempt: n(4)}, inPlace(n(4), n(3)), Release, 0},
		{"released once only", State{Attempt: n(4), Released: true}, inPlace(n(4), n(3)), Wait, 0},
		{"a previous attempt restarts", State{Attempt: n(3), Released: true}, inPlace(n(3), n(3)), Restart, 0},
		{"Recreate strategy: stands aside", State{}, &api.JobSet{}, Release, 0},
		{"disable annotation: stands aside", State{}, disabled, Release, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.state
			if a, v := s.Next(c.js); a != c.action || v != c.value {
				t.Errorf("Next = %s %d, want %s %d", a, v, c.action, c.value)
			}
		})
	}
}

func TestMoved(t *testing.T) {
	inPlace := func(current, previous *int32) *api.JobSet {
		js := &api.JobSet{Spec: api.JobSetSpec{FailurePolicy: &api.FailurePolicy{RestartStrategy: api.InPlaceRestart}}}
		js.Status.CurrentInPlaceRestartAttempt, js.Status.PreviousInPlaceRestartAttempt = current, previous
		return js
	}
	counted := inPlace(ptr.To[int32](1), ptr.To[int32](0))
	counted.Status.ReplicatedJobsStatus = []api.ReplicatedJobStatus{{Name: "w", Ready: 3}}
	disabled := inPlace(ptr.To[int32](1), ptr.To[int32](0))
	disabled.Annotations = map[string]string{api.DisableInPlaceRestartKey: "true"}
	for _, c := range []struct {
		name string
		a, b *api.JobSet
		want bool
	}{
		{"counts only", inPlace(ptr.To[int32](1), ptr.To[int32](0)), counted, false},
		{"previous attempt set", inPlace(ptr.To[int32](1), ptr.To[int32](0)), inPlace(ptr.To[int32](1), ptr.To[int32](1)), true},
		{"current attempt set", inPlace(nil, nil), inPlace(ptr.To[int32](0), nil), true},
		{"disabled", inPlace(ptr.To[int32](1), ptr.To[int32](0)), disabled, true},
	} {
		if got := Moved(c.a, c.b); got != c.want {
			t.Errorf("%s: Moved = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOptionsCheck(t *testing.T) {
	good := Options{Namespace: "ns", JobSetName: "js", PodName: "p", ExitCode: 1}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Options){
		"POD_NAMESPACE":              func(o *Options) { o.Namespace = "" },
		"JOBSET_NAME":                func(o *Options) { o.JobSetName = "" },
		"POD_NAME":                   func(o *Options) { o.PodName = "" },
		"IN_PLACE_RESTART_EXIT_CODE": func(o *Options) { o.ExitCode = 0 },
		"WORKER_COMMAND":             func(o *Options) { o.WorkerCommand, o.ProbePort = "run", "9" },
	} {
		o := good
		edit(&o)
		if err := o.Check(); err == nil || !contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestPodAttempt(t *testing.T) {
	for v, want := range map[string]int32{"0": 0, "7": 7, "-1": -1, "x": -1, "": -1} {
		got := PodAttempt(map[string]string{api.InPlaceRestartAttemptKey: v})
		if n := int32(-1); got != nil {
			n = *got
			if n != want {
				t.Errorf("%q: %d, want %d", v, n, want)
			}
		} else if want != -1 {
			t.Errorf("%q: none, want %d", v, want)
		}
	}
	if PodAttempt(nil) != nil {
		t.Error("no annotation: an attempt")
	}
}
