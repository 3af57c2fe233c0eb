// Package nodelabels keeps a node's labels in a few bytes: the labels a
// pool's nodes have in common are one map for them all, and those whose
// value is the node's own name (its host name) are kept by key.
package nodelabels

import (
	"runtime"
	"slices"
	"sync"
	"weak"
)

// Labels are one node's labels. Read them with Get, or Map for a map of
// the caller's. The zero value has none.
type Labels struct {
	name   string
	common *common
}

// common is what nodes with the same labels, their names aside, share:
// read-only once made.
type common struct {
	labels map[string]string // those whose value is not the node's name
	named  []string          // the keys whose value is the node's name, sorted
}

// Of is the labels of the node called name. A map of 13 labels is about
// 700 bytes a node; Labels are 24, beside what the pool shares.
func Of(name string, labels map[string]string) Labels {
	if len(labels) == 0 {
		return Labels{name: name}
	}
	return Labels{name: name, common: table.intern(name, labels)}
}

// Get is the value of key, and whether the node has it.
func (l Labels) Get(key string) (string, bool) {
	if l.common == nil {
		return "", false
	}
	if v, ok := l.common.labels[key]; ok {
		return v, true
	}
	if _, ok := slices.BinarySearch(l.common.named, key); ok {
		return l.name, true
	}
	return "", false
}

// Value is the value of key, "" when the node has none.
func (l Labels) Value(key string) string {
	v, _ := l.Get(key)
	return v
}

// Len is how many labels the node has.
func (l Labels) Len() int {
	if l.common == nil {
		return 0
	}
	return len(l.common.labels) + len(l.common.named)
}

// Map is the labels as a map of the caller's; nil when there are none,
// as a node's labels decode.
func (l Labels) Map() map[string]string {
	if l.common == nil {
		return nil
	}
	out := make(map[string]string, l.Len())
	for k, v := range l.common.labels {
		out[k] = v
	}
	for _, k := range l.common.named {
		out[k] = l.name
	}
	return out
}

// Equal: the same labels, as Map would give them.
func (l Labels) Equal(o Labels) bool {
	return l.common == o.common && (l.name == o.name || l.common == nil || len(l.common.named) == 0)
}

// table finds the common part already made for the same labels. It
// holds them weakly: a set no node has any more is forgotten.
var table = &interned{m: map[string]weak.Pointer[common]{}}

type interned struct {
	mu   sync.Mutex
	m    map[string]weak.Pointer[common]
	key  []byte   // scratch, under mu
	keys []string // scratch, under mu
}

func (t *interned) intern(name string, labels map[string]string) *common {
	t.mu.Lock()
	defer t.mu.Unlock()
	// The key: the sorted labels not valued name, then the keys that are.
	// Label keys and values never hold a 0 or 1 byte.
	t.keys = t.keys[:0]
	for k := range labels {
		t.keys = append(t.keys, k)
	}
	slices.Sort(t.keys)
	t.key = t.key[:0]
	named := 0
	for _, k := range t.keys {
		if v := labels[k]; v != name {
			t.key = append(append(append(append(t.key, k...), 0), v...), 0)
		} else {
			named++
		}
	}
	t.key = append(t.key, 1)
	for _, k := range t.keys {
		if labels[k] == name {
			t.key = append(append(t.key, k...), 0)
		}
	}
	if c := t.m[string(t.key)].Value(); c != nil {
		return c
	}
	c := &common{labels: make(map[string]string, len(labels)-named), named: make([]string, 0, named)}
	for _, k := range t.keys { // sorted: named is too
		if v := labels[k]; v != name {
			c.labels[k] = v
		} else {
			c.named = append(c.named, k)
		}
	}
	key, wp := string(t.key), weak.Make(c)
	t.m[key] = wp
	runtime.AddCleanup(c, t.forget, entry{key, wp})
	return c
}

type entry struct {
	key string
	wp  weak.Pointer[common]
}

// forget drops an entry whose common part is gone, unless the key has
// been made again since.
func (t *interned) forget(e entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[e.key] == e.wp {
		delete(t.m, e.key)
	}
}

// holds: the table has an entry for wp's set (for tests).
func (t *interned) holds(wp weak.Pointer[common]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.m {
		if e == wp {
			return true
		}
	}
	return false
}
