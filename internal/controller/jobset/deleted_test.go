package jobset

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestRecentDeletes(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var d recentDeletes
	if d.seen("a", t0) {
		t.Fatal("a Job never deleted is seen")
	}
	d.note("a", t0)
	for _, c := range []struct {
		uid  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true},
		{"a", deleteMemory - time.Millisecond, true},
		{"a", deleteMemory, false}, // the cache had time: delete again if it still shows it
		{"b", time.Second, false},
	} {
		if got := d.seen(types.UID(c.uid), t0.Add(c.at)); got != c.want {
			t.Errorf("seen(%s) %s after the delete = %v, want %v", c.uid, c.at, got, c.want)
		}
	}
	// Old entries go once per deleteMemory, when a new one is noted.
	d.note("b", t0.Add(2*deleteMemory))
	if _, kept := d.at["a"]; kept || len(d.at) != 1 {
		t.Errorf("after a later note: %v, want only b", d.at)
	}
}
