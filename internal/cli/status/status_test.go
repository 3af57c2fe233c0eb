package status

import (
	"testing"
	"time"
)

func TestFleetDeadline(t *testing.T) {
	for _, tc := range []struct {
		down []string
		want time.Duration
	}{
		{nil, fleetTimeout},
		{[]string{"kwok", "multislice-manager"}, fleetTimeout},
		{[]string{"etcd"}, servingDownTimeout},
		{[]string{"kube-scheduler", "kube-apiserver"}, servingDownTimeout},
	} {
		if got := fleetDeadline(tc.down); got != tc.want {
			t.Errorf("fleetDeadline(%v) = %s, want %s", tc.down, got, tc.want)
		}
	}
}
