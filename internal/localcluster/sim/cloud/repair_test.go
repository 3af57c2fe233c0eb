package cloud

import (
	"testing"
	"time"

	"github.com/multislice/multislice/internal/localcluster/sim"
)

// A torn-down slice stays gone past the last lease renewal kwok may
// still have queued for its hosts.
func TestRecreateAfterOutlastsRenewals(t *testing.T) {
	for _, c := range []struct {
		hosts int
		want  time.Duration
	}{
		{8, 12 * time.Second},
		{5120, 54 * time.Second},
	} {
		lease := sim.NodeLease(c.hosts)
		got := RecreateAfter(lease)
		if got != c.want {
			t.Errorf("RecreateAfter(%s) = %s, want %s", lease, got, c.want)
		}
		if got <= sim.RenewedWithin(lease) {
			t.Errorf("RecreateAfter(%s) = %s, not past the renewals of %s", lease, got, sim.RenewedWithin(lease))
		}
	}
}
