package sim

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContainerLog(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(time.Minute))
	pod := func(st corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "js-slice-1-0-abcde",
				Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": "0", "jobset.sigs.k8s.io/in-place-restart-attempt": "2"},
				Labels:      map[string]string{"jobset.sigs.k8s.io/job-index": "1"}},
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{
				{Name: "TPU_WORKER_ID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
				{Name: "MEGASCALE_SLICE_ID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['jobset.sigs.k8s.io/job-index']"}}},
				{Name: "HOME", Value: "/root"},
			}}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{st}},
		}
	}
	running := corev1.ContainerStatus{Name: "main", RestartCount: 1,
		State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: end}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 42, Reason: "Error", StartedAt: start, FinishedAt: end}}}
	exited := corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: start, FinishedAt: end}}}
	waiting := corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	for _, tc := range []struct {
		name      string
		status    corev1.ContainerStatus
		container string
		previous  bool
		want      []string // substrings, line by line
		ended     bool
		err       string
	}{
		{name: "running", status: running, container: "main",
			want: []string{"started: pod ns/js-slice-1-0-abcde on node node-a, container main (restart 1)", "TPU environment: MEGASCALE_SLICE_ID=1 TPU_WORKER_ID=0", "in-place restart attempt 2"}},
		{name: "previous instance", status: running, container: "main", previous: true,
			want: []string{"(restart 0)", "TPU environment:", "exited with code 42 (Error)"}, ended: true},
		{name: "exited", status: exited, container: "main",
			want: []string{"(restart 0)", "TPU environment:", "in-place restart attempt 2", "exited with code 0 (Completed)"}, ended: true},
		{name: "no previous", status: exited, container: "main", previous: true, err: "previous terminated container", ended: true},
		{name: "waiting", status: waiting, container: "main", err: "waiting to start"},
		{name: "unknown container", status: running, container: "other", err: `container "other" is not valid`, ended: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, ended, err := ContainerLog(pod(tc.status), tc.container, tc.previous)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || ended != tc.ended || len(lines) != len(tc.want) {
				t.Fatalf("got %v ended=%v err=%v, want %d lines ended=%v", lines, ended, err, len(tc.want), tc.ended)
			}
			for i, l := range lines {
				if !strings.Contains(l.Text, tc.want[i]) {
					t.Errorf("line %d = %q, want it to contain %q", i, l.Text, tc.want[i])
				}
			}
		})
	}
}
