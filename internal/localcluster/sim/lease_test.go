package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestNodeLease(t *testing.T) {
	for _, c := range []struct {
		hosts int
		want  time.Duration
	}{
		{0, KubeletLease},
		{9, KubeletLease},
		{LongLeaseHosts, KubeletLease},
		{LongLeaseHosts + 1, longLease},
		{5121, longLease},
	} {
		if got := NodeLease(c.hosts); got != c.want {
			t.Errorf("NodeLease(%d) = %s, want %s", c.hosts, got, c.want)
		}
	}
	for lease, want := range map[time.Duration]time.Duration{KubeletLease: 50 * time.Second, longLease: longLease} {
		if got := MonitorGrace(lease); got != want {
			t.Errorf("MonitorGrace(%s) = %s, want %s", lease, got, want)
		}
	}
	if got := RenewedWithin(KubeletLease); got != 10400*time.Millisecond {
		t.Errorf("RenewedWithin(%s) = %s, want 10.4s (a quarter, plus kwok's 4%% jitter)", KubeletLease, got)
	}
}

func TestKwokConfigSetsTheLease(t *testing.T) {
	for _, lease := range []time.Duration{KubeletLease, longLease} {
		cfg, err := KwokConfig(lease)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("  nodeLeaseDurationSeconds: %d\n", int(lease.Seconds()))
		if strings.Count(string(cfg), "nodeLeaseDurationSeconds") != 1 || !strings.Contains(string(cfg), want) {
			t.Errorf("KwokConfig(%s) does not set %q", lease, want)
		}
		if len(cfg) < len(stages) {
			t.Errorf("KwokConfig(%s) lost part of the stages", lease)
		}
	}
}
