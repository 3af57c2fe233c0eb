package jobset

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The first wake in a window is at once, later ones at its end; a wake
// after the window opens a new one; JobSets have their own windows.
func TestWakeDelay(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	w := &wakes{}
	for _, step := range []struct {
		key  types.NamespacedName
		at   time.Duration
		want time.Duration
	}{
		{a, 0, 0},
		{a, 100 * time.Millisecond, 900 * time.Millisecond},
		{a, 999 * time.Millisecond, time.Millisecond},
		{b, 500 * time.Millisecond, 0},
		{a, time.Second, 0},
		{b, 1200 * time.Millisecond, 300 * time.Millisecond},
		{a, 3 * time.Second, 0},
	} {
		if got := w.delay(step.key, t0.Add(step.at)); got != step.want {
			t.Errorf("wake of %s at +%s waits %s, want %s", step.key.Name, step.at, got, step.want)
		}
	}
	if len(w.first) != 1 {
		t.Errorf("%d windows remembered after the others closed, want 1", len(w.first))
	}
}
