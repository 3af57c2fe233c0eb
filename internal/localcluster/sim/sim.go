// Package sim defines how the simulated fleet behaves: the kwok Stages that
// play kubelet for simulated nodes and their pods, and the pod annotations
// that tell a simulated pod when to exit and with which code.
package sim

import (
	_ "embed"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

const (
	// RunAnnotation makes a Running pod on a simulated node exit after the
	// given Go duration ("30s", "2m"). Without it the pod runs until deleted.
	RunAnnotation = "multislice.dev/simulate-run"
	// ExitCodeAnnotation is the exit code of that exit (default "0"): 0
	// makes the pod Succeeded, anything else Failed.
	ExitCodeAnnotation = "multislice.dev/simulate-exit-code"
	// GracefulStopAnnotation makes a deleted pod take its whole termination
	// grace period to go, like a process that ignores SIGTERM.
	GracefulStopAnnotation = "multislice.dev/simulate-graceful-stop"
	// SimulatedCondition is a pod condition that says, on every pod a
	// simulated node runs, that no container process actually ran.
	SimulatedCondition = "multislice.dev/Simulated"
)

// stages is the kwok configuration: KwokConfiguration options plus the
// node and pod Stages, as one multi-document YAML file for kwok --config.
//
//go:embed stages.yaml
var stages []byte

// KwokRBAC is what kwok may do: a ClusterRole and its binding, to which
// the local cluster adds kwok's user.
//
//go:embed kwok-rbac.yaml
var KwokRBAC []byte

// NewCache is the one cache of a `multislice sim-agents` process, shared by
// the agents and the kubelet log endpoint: pods (and JobSets, once the
// agents find the CRD served), without the managed fields nothing here
// reads. The caller starts it.
func NewCache(cfg *rest.Config) (cache.Cache, error) {
	return cache.New(cfg, cache.Options{Scheme: scheme(), DefaultTransform: cache.TransformStripManagedFields()})
}

// scheme: the kinds the simulator reads and writes.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = api.AddToScheme(s)
	_ = corev1.AddToScheme(s)
	return s
}
