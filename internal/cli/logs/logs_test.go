package logs

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"jobset.sigs.k8s.io/job-global-index": slice, "jobset.sigs.k8s.io/restart-attempt": attempt},
			Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": worker}}}
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
		if got := tc.o.Selects(WorkerOf(tc.pod), tc.minAttempt); got != tc.want {
			t.Errorf("%+v on %v (min attempt %d) = %v, want %v", tc.o, WorkerOf(tc.pod), tc.minAttempt, got, tc.want)
		}
	}
	w := WorkerOf(pod("1", "0", "2"))
	if got := w.Prefix(); got != "[slice-1/worker-0 attempt-2] " {
		t.Errorf("prefix = %q", got)
	}
	w.InPlace = "3"
	if got := w.Prefix(); got != "[slice-1/worker-0 attempt-2/3] " {
		t.Errorf("prefix with an in-place attempt = %q", got)
	}
}
