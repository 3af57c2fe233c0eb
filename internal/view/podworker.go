package view

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// PodWorker says which slice, worker and attempt a JobSet pod is (the
// prefix of its log lines).
type PodWorker struct {
	Slice, Worker, Attempt int
	// InPlace is the in-place restart attempt its agent reported ("" if none).
	InPlace string
}

// PodWorkerOf reads a JobSet pod's labels and annotations.
func PodWorkerOf(p *corev1.Pod) PodWorker {
	num := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			return -1
		}
		return n
	}
	slice := p.Labels[api.JobGlobalIndexKey]
	if slice == "" {
		slice = p.Labels[api.JobIndexKey]
	}
	return PodWorker{Slice: num(slice), Worker: num(p.Annotations[batchv1.JobCompletionIndexAnnotation]),
		Attempt: num(p.Labels[api.RestartsKey]), InPlace: p.Annotations[api.InPlaceRestartAttemptKey]}
}

// Prefix starts every line of the worker's log.
func (w PodWorker) Prefix() string {
	attempt := strconv.Itoa(w.Attempt)
	if w.InPlace != "" {
		attempt += "/" + w.InPlace
	}
	return fmt.Sprintf("[slice-%d/worker-%d attempt-%s] ", w.Slice, w.Worker, attempt)
}

// DefaultContainer is what `kubectl logs` reads without -c.
func DefaultContainer(p *corev1.Pod) string {
	if c := p.Annotations["kubectl.kubernetes.io/default-container"]; c != "" {
		return c
	}
	if len(p.Spec.Containers) > 0 {
		return p.Spec.Containers[0].Name
	}
	return ""
}
