package nodelabels

import (
	"fmt"
	"maps"
	"runtime"
	"testing"
	"time"
	"weak"
)

func pool(p, host string) map[string]string {
	return map[string]string{"kubernetes.io/hostname": host, "kubernetes.io/os": "linux",
		"cloud.google.com/gke-nodepool": p, "cloud.google.com/gke-tpu-topology": "4x4"}
}

// host is a host of pool p with 13 labels, as a simulated TPU host has.
func host(p, name string) map[string]string {
	m := pool(p, name)
	for j := range 9 {
		m[fmt.Sprintf("example.com/label-%d", j)] = "value"
	}
	return m
}

func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		node   string
		labels map[string]string
	}{
		{"none", "n", nil},
		{"empty", "n", map[string]string{}},
		{"a pool's host", "gke-p-0", pool("p", "gke-p-0")},
		{"no host name", "n", map[string]string{"a": "1"}},
		{"two keys valued the name", "n", map[string]string{"a": "n", "b": "n", "c": "1"}},
		{"only the name", "n", map[string]string{"kubernetes.io/hostname": "n"}},
		{"an empty value", "n", map[string]string{"a": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Of(tc.node, tc.labels)
			if got := l.Map(); !maps.Equal(got, tc.labels) || (got == nil) != (len(tc.labels) == 0) {
				t.Errorf("Map() = %v, want %v", got, tc.labels)
			}
			if l.Len() != len(tc.labels) {
				t.Errorf("Len() = %d, want %d", l.Len(), len(tc.labels))
			}
			for k, v := range tc.labels {
				if got, ok := l.Get(k); !ok || got != v {
					t.Errorf("Get(%q) = %q, %v; want %q", k, got, ok, v)
				}
			}
			if got, ok := l.Get("missing"); ok || got != "" {
				t.Errorf("Get(missing) = %q, %v", got, ok)
			}
			if !l.Equal(Of(tc.node, maps.Clone(tc.labels))) {
				t.Error("not Equal to the same labels made again")
			}
		})
	}
}

func TestEqual(t *testing.T) {
	a := Of("gke-p-0", pool("p", "gke-p-0"))
	for _, tc := range []struct {
		name string
		b    Labels
		want bool
	}{
		{"the same", Of("gke-p-0", pool("p", "gke-p-0")), true},
		{"another host of the pool", Of("gke-p-1", pool("p", "gke-p-1")), false},
		{"another pool", Of("gke-p-0", pool("q", "gke-p-0")), false},
		{"none", Of("gke-p-0", nil), false},
		{"a label more", Of("gke-p-0", func() map[string]string { m := pool("p", "gke-p-0"); m["x"] = "y"; return m }()), false},
	} {
		if got := a.Equal(tc.b); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !Of("a", map[string]string{"k": "v"}).Equal(Of("b", map[string]string{"k": "v"})) {
		t.Error("labels that do not name their node differ by the node's name")
	}
}

// TestAPoolSharesOneSet: a pool's hosts share one common part, and the
// table forgets it once no node holds it.
func TestAPoolSharesOneSet(t *testing.T) {
	var hosts []Labels
	for i := range 16 {
		name := fmt.Sprintf("gke-shared-%d", i)
		hosts = append(hosts, Of(name, pool("shared", name)))
	}
	for _, h := range hosts[1:] {
		if h.common != hosts[0].common {
			t.Fatal("two hosts of a pool hold two sets")
		}
	}
	wp := weak.Make(hosts[0].common)
	if !table.holds(wp) {
		t.Fatal("the table does not hold the pool's set")
	}
	runtime.KeepAlive(hosts)
	hosts = nil
	for deadline := time.Now().Add(10 * time.Second); table.holds(wp); {
		if time.Now().After(deadline) {
			t.Fatal("the table still holds the pool's set after the pool is gone")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLabelsAreSmall: 5,120 hosts of 320 pools, 13 labels each, against
// a map each.
func TestLabelsAreSmall(t *testing.T) {
	labelsOf := func(i int) (string, map[string]string) {
		p := fmt.Sprintf("pool-%d", i/16)
		name := fmt.Sprintf("gke-%s-%d", p, i%16)
		return name, host(p, name)
	}
	const n = 5120
	measure := func(keep func(i int, host string, m map[string]string) any) uint64 {
		inputs := make([][2]any, n)
		for i := range inputs {
			host, m := labelsOf(i)
			inputs[i] = [2]any{host, m}
		}
		out := make([]any, n)
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		for i, in := range inputs {
			out[i] = keep(i, in[0].(string), in[1].(map[string]string))
		}
		runtime.GC()
		runtime.ReadMemStats(&b)
		runtime.KeepAlive(out)
		runtime.KeepAlive(inputs)
		return (b.HeapAlloc - a.HeapAlloc) / n
	}
	maps := measure(func(_ int, _ string, m map[string]string) any { return maps.Clone(m) })
	ours := measure(func(_ int, host string, m map[string]string) any { l := Of(host, m); return &l })
	t.Logf("per node: a map %d bytes, Labels %d", maps, ours)
	if ours*5 > maps {
		t.Errorf("Labels take %d bytes a node, a map %d: want a fifth or less", ours, maps)
	}
}

// BenchmarkOf is what a node's update event costs placement and the
// cache (each makes its labels once).
func BenchmarkOf(b *testing.B) {
	m := host("p", "gke-p-0")
	keep := Of("gke-p-0", m)
	b.ReportAllocs()
	for b.Loop() {
		Of("gke-p-0", m)
	}
	runtime.KeepAlive(keep)
}

// BenchmarkMap is what a view or a copy of a cached node costs.
func BenchmarkMap(b *testing.B) {
	l := Of("gke-p-0", host("p", "gke-p-0"))
	b.ReportAllocs()
	for b.Loop() {
		l.Map()
	}
}
