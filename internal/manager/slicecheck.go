package manager

import (
	"context"
	"time"

	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	"github.com/multislice/multislice/internal/controller/slicecheck"
)

// sliceCheckWhenKueue starts the slice admission check (slicecheck) once
// the API server serves Kueue's Workloads and AdmissionChecks: a cache
// cannot watch a kind that is not served, and Kueue may be installed
// after the manager starts (multislice up --kueue does), or never.
type sliceCheckWhenKueue struct {
	mgr       ctrl.Manager
	discovery discovery.DiscoveryInterface
	every     time.Duration
}

// NeedLeaderElection: only adding the controllers; they wait for the lease.
func (s *sliceCheckWhenKueue) NeedLeaderElection() bool { return false }

func (s *sliceCheckWhenKueue) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("slice-admission-check")
	t := time.NewTicker(s.every)
	defer t.Stop()
	for !slicecheck.ServesKueue(s.discovery) {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	log.Info("Kueue is served: the admission check " + slicev1beta1.AdmissionCheckControllerName + " runs")
	return (&slicecheck.Reconciler{Client: s.mgr.GetClient(), Recorder: s.mgr.GetEventRecorder("slice-admission-check")}).SetupWithManager(s.mgr)
}
