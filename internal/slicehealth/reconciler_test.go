package slicehealth

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/gke"
)

// TestListNodes: a pool's slice is listed by the pool index, anything
// else by its selector.
func TestListNodes(t *testing.T) {
	other, _ := labels.Parse("example.com/block=b1")
	two := labels.SelectorFromSet(labels.Set{gke.NodePoolLabel: "np-0", "example.com/x": "y"})
	in, _ := labels.Parse(gke.NodePoolLabel + " in (np-0)")
	for _, tc := range []struct {
		name string
		sel  labels.Selector
		want client.ListOption
	}{
		{"a pool", labels.SelectorFromSet(labels.Set{gke.NodePoolLabel: "np-0"}), client.MatchingFields{poolIndex: "np-0"}},
		{"another key", other, client.MatchingLabelsSelector{Selector: other}},
		{"a pool and more", two, client.MatchingLabelsSelector{Selector: two}},
		{"a set of pools", in, client.MatchingLabelsSelector{Selector: in}},
		{"none", nil, client.MatchingLabelsSelector{}},
	} {
		if got := listNodes(tc.sel); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: listNodes = %#v, want %#v", tc.name, got, tc.want)
		}
	}
}
