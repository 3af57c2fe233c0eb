package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// LogLine is one line a simulated container "printed", with the time the
// simulated kubelet would stamp on it.
type LogLine struct {
	Time time.Time
	Text string
}

// ContainerLog is what a simulated container wrote: no process runs on a
// simulated node, so its log says honestly what is known of it: that it
// started (where, which container restart), its TPU environment as the
// webhook injected it, its restart attempts, and how it exited. previous
// asks for the instance before the last restart, as `kubectl logs -p`.
// ended says that the instance is over: a follower has nothing to wait for.
func ContainerLog(pod *corev1.Pod, container string, previous bool) (lines []LogLine, ended bool, err error) {
	spec := findContainer(pod, container)
	if spec == nil {
		return nil, true, fmt.Errorf("container %q is not valid for pod %q", container, pod.Name)
	}
	st := findStatus(pod, container)
	if st == nil {
		return nil, false, fmt.Errorf("container %q in pod %q is waiting to start", container, pod.Name)
	}
	restart, state := st.RestartCount, st.State
	if previous {
		if st.LastTerminationState.Terminated == nil {
			return nil, true, fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		restart, state = st.RestartCount-1, st.LastTerminationState
	}
	var started time.Time
	switch {
	case state.Running != nil:
		started = state.Running.StartedAt.Time
	case state.Terminated != nil:
		started = state.Terminated.StartedAt.Time
	default:
		return nil, false, fmt.Errorf("container %q in pod %q is waiting to start", container, pod.Name)
	}
	say := func(format string, args ...any) {
		lines = append(lines, LogLine{Time: started, Text: fmt.Sprintf(format, args...)})
	}
	say("simulated worker started: pod %s/%s on node %s, container %s (restart %d); no process runs on a simulated node",
		pod.Namespace, pod.Name, pod.Spec.NodeName, container, restart)
	if env := tpuEnv(pod, spec); env != "" {
		say("TPU environment: %s", env)
	}
	if a, ok := pod.Annotations[api.InPlaceRestartAttemptKey]; ok && !previous {
		say("in-place restart attempt %s", a)
	}
	if t := state.Terminated; t != nil {
		lines = append(lines, exitLine(t))
		return lines, true, nil
	}
	return lines, false, nil
}

// tpuEnv is the container's TPU, Megascale and JobSet variables, resolved
// as the kubelet would resolve them (values and downward-API fields).
func tpuEnv(pod *corev1.Pod, c *corev1.Container) string {
	var kv []string
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, "TPU_") && !strings.HasPrefix(e.Name, "MEGASCALE_") && !strings.HasPrefix(e.Name, "JOBSET_") {
			continue
		}
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			v = fieldValue(pod, e.ValueFrom.FieldRef.FieldPath)
		}
		kv = append(kv, e.Name+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}

// fieldValue resolves the downward-API paths the TPU webhook uses.
func fieldValue(pod *corev1.Pod, path string) string {
	key := func(prefix string) (string, bool) {
		if !strings.HasPrefix(path, prefix+"['") || !strings.HasSuffix(path, "']") {
			return "", false
		}
		return path[len(prefix)+2 : len(path)-2], true
	}
	if k, ok := key("metadata.annotations"); ok {
		return pod.Annotations[k]
	}
	if k, ok := key("metadata.labels"); ok {
		return pod.Labels[k]
	}
	switch path {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "spec.nodeName":
		return pod.Spec.NodeName
	case "status.podIP":
		return pod.Status.PodIP
	}
	return ""
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func findStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func exitLine(t *corev1.ContainerStateTerminated) LogLine {
	return LogLine{Time: t.FinishedAt.Time, Text: fmt.Sprintf("exited with code %d (%s)", t.ExitCode, t.Reason)}
}
