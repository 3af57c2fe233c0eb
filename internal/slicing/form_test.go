package slicing

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/tpu"
)

// block returns the cubes of a block of size x*y*z, all free, named
// <block>-<x><y><z>; used lists positions already taken.
func block(name string, size Pos, used ...Pos) []Cube {
	var out []Cube
	for z := range size[2] {
		for y := range size[1] {
			for x := range size[0] {
				p := Pos{x, y, z}
				free := true
				for _, u := range used {
					free = free && u != p
				}
				out = append(out, Cube{ID: fmt.Sprintf("%s-%d%d%d", name, x, y, z), Block: name, Pos: p, Free: free})
			}
		}
	}
	return out
}

func topo(s string) tpu.Topology {
	t, err := tpu.ParseTopology(s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestForm(t *testing.T) {
	six := Pos{1, 2, 3}
	for _, tc := range []struct {
		name  string
		wants []Want
		cubes []Cube
		want  map[string][]string
		why   string
	}{
		{"one cube", []Want{{"a", topo("4x4x4")}}, block("b", six), map[string][]string{"a": {"b-000"}}, ""},
		{"two adjacent cubes that fill a row of the block",
			[]Want{{"a", topo("4x4x8")}}, block("b", six), map[string][]string{"a": {"b-000", "b-010"}}, ""},
		{"two slices of two cubes leave the third pair together",
			[]Want{{"a", topo("4x4x8")}, {"b", topo("4x4x8")}}, block("b", six),
			map[string][]string{"a": {"b-000", "b-010"}, "b": {"b-001", "b-002"}}, ""},
		{"a used cube is stepped round",
			[]Want{{"a", topo("4x4x8")}}, block("b", six, Pos{0, 0, 0}), map[string][]string{"a": {"b-010", "b-011"}}, ""},
		{"the larger slice is placed first", []Want{{"small", topo("4x4x4")}, {"big", topo("4x8x8")}}, block("b", Pos{2, 2, 2}, Pos{1, 1, 1}),
			map[string][]string{"big": {"b-000", "b-010", "b-001", "b-011"}, "small": {"b-110"}}, ""},
		{"all or none", []Want{{"a", topo("4x4x8")}, {"b", topo("4x4x8")}}, block("b", Pos{1, 1, 3}), nil,
			"slice b (4x4x8) needs 2 adjacent free 4x4x4 cubes of one block (with the other 1 slices of its JobSet, all at once), and no such set is free now: block b (1x1x3 cubes)"},
		{"too large for any block", []Want{{"a", topo("8x8x8")}}, block("b", six), nil, "no block is that large in any orientation"},
		{"no sub-block nodes", []Want{{"a", topo("4x4x4")}}, nil, nil, "provision tpu7x sub-blocks"},
		{"a slice stays in one block", []Want{{"a", topo("4x4x8")}}, append(block("b1", Pos{1, 1, 1}), block("b2", Pos{1, 1, 1})...), nil, "no block is that large"},
		{"not whole cubes", []Want{{"a", topo("4x4x6")}}, block("b", six), nil, "multiple of 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Form(tc.wants, tc.cubes)
			if !reflect.DeepEqual(r.Cubes, tc.want) {
				t.Errorf("cubes %v, want %v (why %q)", r.Cubes, tc.want, r.Why)
			}
			if tc.why != "" && !strings.Contains(r.Why, tc.why) {
				t.Errorf("why %q, want it to say %q", r.Why, tc.why)
			}
		})
	}
}

// TestFormKeepsLargestShapes: after a 4x4x8 in a 2x2x2 block, a 4x8x8
// (four cubes, a face of the block) still forms.
func TestFormKeepsLargestShapes(t *testing.T) {
	cubes := block("b", Pos{2, 2, 2})
	first := Form([]Want{{"a", topo("4x4x8")}}, cubes)
	used := map[string]bool{}
	for _, id := range first.Cubes["a"] {
		used[id] = true
	}
	for i := range cubes {
		cubes[i].Free = !used[cubes[i].ID]
	}
	if r := Form([]Want{{"b", topo("4x8x8")}}, cubes); r.Cubes == nil {
		t.Fatalf("4x8x8 no longer forms after 4x4x8 took %v: %s", first.Cubes["a"], r.Why)
	}
}

func TestParsePos(t *testing.T) {
	if p, err := ParsePos("1.0.2"); err != nil || p != (Pos{1, 0, 2}) {
		t.Fatalf("ParsePos = %v, %v", p, err)
	}
	for _, bad := range []string{"", "1.2", "a.b.c", "-1.0.0", "1.0.1000"} {
		if _, err := ParsePos(bad); err == nil {
			t.Errorf("ParsePos(%q): no error", bad)
		}
	}
}

// TestFormSubSlices: sub-slices cut one cube (a quarter per 2x2x4, a half
// per 2x4x4), never a host twice, and leave whole cubes whole.
func TestFormSubSlices(t *testing.T) {
	cubes := block("b", Pos{1, 1, 2})
	r := Form([]Want{{"q1", topo("2x2x4")}, {"h", topo("2x4x4")}, {"q2", topo("4x2x2")}}, cubes)
	if r.Cubes == nil {
		t.Fatal(r.Why)
	}
	for _, name := range []string{"q1", "h", "q2"} {
		if got := r.Cubes[name]; len(got) != 1 || got[0] != "b-000" {
			t.Errorf("%s on %v, want the one cube b-000 (b-001 stays whole)", name, got)
		}
	}
	if all := r.Quarters["q1"] | r.Quarters["h"] | r.Quarters["q2"]; all != 0b1111 || r.Quarters["q1"]&r.Quarters["h"] != 0 || r.Quarters["q1"]&r.Quarters["q2"] != 0 {
		t.Errorf("quarters %v overlap or do not fill the cube", r.Quarters)
	}
	if hosts := QuarterHosts(r.Quarters["h"]); len(hosts) != 8 {
		t.Errorf("a 2x4x4 sub-slice has %d hosts (%v), want 8", len(hosts), hosts)
	}
	cubes[0].Quarters = 0b1111
	cubes[1].Free = false
	if r := Form([]Want{{"q", topo("2x2x4")}}, cubes); r.Cubes != nil || !strings.Contains(r.Why, "needs 1 free quarter(s)") {
		t.Errorf("a full block gave %v (%s)", r.Cubes, r.Why)
	}
}
