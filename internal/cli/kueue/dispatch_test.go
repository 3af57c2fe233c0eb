package kueue

import (
	"strings"
	"testing"
)

func TestDispatchProblems(t *testing.T) {
	lq := queueRef{Namespace: "default", Name: "lq", ClusterQueue: "cq"}
	for _, tc := range []struct {
		name   string
		mine   []queueRef
		theirs map[string]queueRef
		active map[string]bool
		want   string // "" none
	}{
		{"the same queues on both sides", []queueRef{lq}, map[string]queueRef{"default/lq": lq}, map[string]bool{"cq": true}, ""},
		{"no LocalQueue on the worker", []queueRef{lq}, nil, map[string]bool{"cq": true}, "the worker has no LocalQueue default/lq"},
		{"the worker's ClusterQueue missing", []queueRef{lq}, map[string]queueRef{"default/lq": {Namespace: "default", Name: "lq", ClusterQueue: "other"}},
			map[string]bool{"cq": true}, `feeds ClusterQueue "other", which does not exist or is not active there`},
		{"no LocalQueue here", nil, nil, nil, "no LocalQueue here feeds ClusterQueue cq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(dispatchProblems(tc.mine, tc.theirs, tc.active, "cq"), "; ")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("problems %q, want %q", got, tc.want)
			}
		})
	}
}
