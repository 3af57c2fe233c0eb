package realhost

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// TPUChipsPatch is the status patch that gives a real host's node the
// google.com/tpu chips its accelerator-count label promises, as GKE's TPU
// device plugin advertises them; nil when the node has them already or is
// not a real TPU host. A kubelet knows nothing of these chips (fake ones,
// an extended resource) and zeroes them when it registers again.
func TPUChipsPatch(node *corev1.Node) []byte {
	if node.Labels[fleet.RealHostLabel] != "true" {
		return nil
	}
	chips, err := strconv.ParseInt(node.Labels[gke.AcceleratorCountLabel], 10, 64)
	if err != nil || chips <= 0 {
		return nil
	}
	want := *resource.NewQuantity(chips, resource.DecimalSI)
	capacity, allocatable := node.Status.Capacity[gke.TPUResource], node.Status.Allocatable[gke.TPUResource]
	if capacity.Cmp(want) == 0 && allocatable.Cmp(want) == 0 {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{
		"capacity":    map[string]string{gke.TPUResource: want.String()},
		"allocatable": map[string]string{gke.TPUResource: want.String()},
	}})
	return patch
}
