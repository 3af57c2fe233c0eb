package jobset

import (
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// A pending wake is due once the wakes pause for wakeQuiet, or wakeMaxWait
// after the first, whichever comes first.
func TestWakeDue(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, tc := range []struct {
		name        string
		first, last time.Duration
		now         time.Duration
		due         bool
		wait        time.Duration
	}{
		{"one wake, just now", 0, 0, 0, false, 100 * time.Millisecond},
		{"one wake, quiet since", 0, 0, 100 * time.Millisecond, true, 0},
		{"wakes still coming", 0, 500 * time.Millisecond, 550 * time.Millisecond, false, 50 * time.Millisecond},
		{"a pause after a burst", 0, 500 * time.Millisecond, 600 * time.Millisecond, true, 0},
		{"a burst that does not pause", 0, 950 * time.Millisecond, 960 * time.Millisecond, false, 40 * time.Millisecond},
		{"at most a second", 0, 990 * time.Millisecond, time.Second, true, 0},
	} {
		due, wait := due(pendingWake{first: at(tc.first), last: at(tc.last)}, at(tc.now))
		if due != tc.due || wait != tc.wait {
			t.Errorf("%s: due %v, wait %s; want %v, %s", tc.name, due, wait, tc.due, tc.wait)
		}
	}
}

// A burst of wakes of one JobSet makes one look, soon after it ends.
func TestWakesCoalesce(t *testing.T) {
	w := wakes{clock: clock.RealClock{}}
	var looks atomic.Int32
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	for range 20 {
		w.wake(key, func() { looks.Add(1) })
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for looks.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // no second look follows
	if n := looks.Load(); n != 1 {
		t.Errorf("%d looks after a burst of 20 wakes, want 1", n)
	}
	w.wake(key, func() { looks.Add(1) }) // a later wake looks again
	for looks.Load() == 1 && time.Now().Before(deadline.Add(5*time.Second)) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := looks.Load(); n != 2 {
		t.Errorf("%d looks after a later wake, want 2", n)
	}
}
