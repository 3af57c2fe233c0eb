package tpu

import (
	"strings"
	"testing"
)

// The expected values come from the reference tables (gke-tpu-ecosystem.md
// sections 1b and 2c): hosts = chips / chips-per-VM, accelerator type names
// count TensorCores except on v5e and v6e, bounds and wrap as the device
// plugin computes them.
func TestNewShape(t *testing.T) {
	cases := []struct {
		accelerator, topology, machineType string
		wantMachine                        string
		wantHosts, wantChipsPerHost        int
		wantType                           string
		wantMultiHost                      bool
		wantChipBounds, wantHostBounds     string
		wantWrap                           string
	}{
		{"tpu-v4-podslice", "2x2x1", "", "ct4p-hightpu-4t", 1, 4, "v4-8", false, "2,2,1", "1,1,1", "false,false,false"},
		{"tpu-v4-podslice", "2x2x2", "", "ct4p-hightpu-4t", 2, 4, "v4-16", true, "2,2,1", "1,1,2", "false,false,false"},
		{"tpu-v4-podslice", "2x2x4", "ct4p-hightpu-4t", "ct4p-hightpu-4t", 4, 4, "v4-32", true, "2,2,1", "1,1,4", "false,false,false"},
		{"tpu-v4-podslice", "4x4x4", "", "ct4p-hightpu-4t", 16, 4, "v4-128", true, "2,2,1", "2,2,4", "true,true,true"},
		{"tpu-v5-lite-podslice", "1x1", "", "ct5lp-hightpu-1t", 1, 1, "v5litepod-1", false, "1,1,1", "1,1,1", "false,false,false"},
		{"tpu-v5-lite-podslice", "2x4", "", "ct5lp-hightpu-8t", 1, 8, "v5litepod-8", false, "2,4,1", "1,1,1", "false,false,false"},
		{"tpu-v5-lite-podslice", "2x4", "ct5lp-hightpu-4t", "ct5lp-hightpu-4t", 2, 4, "v5litepod-8", true, "2,2,1", "1,2,1", "false,false,false"},
		{"tpu-v5-lite-podslice", "4x4", "", "ct5lp-hightpu-4t", 4, 4, "v5litepod-16", true, "2,2,1", "2,2,1", "false,false,false"},
		{"tpu-v5-lite-podslice", "16x16", "", "ct5lp-hightpu-4t", 64, 4, "v5litepod-256", true, "2,2,1", "8,8,1", "true,true,false"},
		{"tpu-v5p-slice", "2x2x1", "", "ct5p-hightpu-4t", 1, 4, "v5p-8", false, "2,2,1", "1,1,1", "false,false,false"},
		{"tpu-v5p-slice", "2x2x2", "", "ct5p-hightpu-4t", 2, 4, "v5p-16", true, "2,2,1", "1,1,2", "false,false,false"},
		{"tpu-v6e-slice", "2x2", "", "ct6e-standard-4t", 1, 4, "v6e-4", false, "2,2,1", "1,1,1", "false,false,false"},
		{"tpu-v6e-slice", "4x4", "", "ct6e-standard-4t", 4, 4, "v6e-16", true, "2,2,1", "2,2,1", "false,false,false"},
		{"tpu-v6e-slice", "8x16", "", "ct6e-standard-4t", 32, 4, "v6e-128", true, "2,2,1", "4,8,1", "false,true,false"},
		{"tpu7x", "1x1x1", "", "tpu7x-standard-1t", 1, 1, "tpu7x-2", false, "1,1,1", "1,1,1", "false,false,false"},
		{"tpu7x", "2x2x2", "", "tpu7x-standard-4t", 2, 4, "tpu7x-16", true, "2,2,1", "1,1,2", "false,false,false"},
		{"tpu7x", "4x4x4", "", "tpu7x-standard-4t", 16, 4, "tpu7x-128", true, "2,2,1", "2,2,4", "true,true,true"},
		{"tpu-v3-slice", "4x4", "", "ct3p-hightpu-4t", 4, 4, "v3-32", true, "2,2,1", "2,2,1", "false,false,false"},
	}
	for _, c := range cases {
		t.Run(c.accelerator+"/"+c.topology+"/"+c.machineType, func(t *testing.T) {
			s, err := NewShape(c.accelerator, c.topology, c.machineType)
			if err != nil {
				t.Fatalf("NewShape: %v", err)
			}
			got := []any{s.MachineType, s.Hosts, s.ChipsPerHost, s.AcceleratorType(), s.MultiHost(),
				s.ChipsPerHostBounds(), s.HostBounds(), s.Wrap()}
			want := []any{c.wantMachine, c.wantHosts, c.wantChipsPerHost, c.wantType, c.wantMultiHost,
				c.wantChipBounds, c.wantHostBounds, c.wantWrap}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %v, want %v (all: %v)", i, got[i], want[i], got)
				}
			}
		})
	}
}

func TestNewShapeRejects(t *testing.T) {
	cases := []struct{ accelerator, topology, machineType, wantErr string }{
		{"tpu-v9", "2x2x2", "", `unknown TPU accelerator "tpu-v9"`},
		{"tpu-v4-podslice", "2x2", "", "v4 topologies have 3 dimensions"},
		{"tpu-v4-podslice", "2x2xq", "", "is not a positive integer"},
		{"tpu-v4-podslice", "4x2x2", "", "non-decreasing order, as 2x2x4"},
		{"tpu-v4-podslice", "2x2x3", "", "each dimension must be 2 or a multiple of 4"},
		{"tpu-v4-podslice", "1x1x1", "", "single-host shapes are 2x2x1"},
		{"tpu-v5-lite-podslice", "3x3", "", "v5e does not offer topology 3x3"},
		{"tpu-v4-podslice", "2x2x2", "ct5p-hightpu-4t", `machine type "ct5p-hightpu-4t" is v5p`},
		{"tpu-v5-lite-podslice", "4x4", "ct5lp-hightpu-8t", "8 chips per host cannot build topology 4x4"},
		{"tpu-v4-podslice", "2x2x2", "n2-standard-8", `unknown TPU machine type "n2-standard-8"`},
	}
	for _, c := range cases {
		_, err := NewShape(c.accelerator, c.topology, c.machineType)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("NewShape(%q, %q, %q) = %v, want error containing %q", c.accelerator, c.topology, c.machineType, err, c.wantErr)
		}
	}
}

func TestShapeForType(t *testing.T) {
	cases := map[string]struct {
		accelerator, topology string
		hosts                 int
	}{
		"v4-16":         {"tpu-v4-podslice", "2x2x2", 2},
		"v4-8":          {"tpu-v4-podslice", "2x2x1", 1},
		"v5litepod-16":  {"tpu-v5-lite-podslice", "4x4", 4},
		"v5e-16":        {"tpu-v5-lite-podslice", "4x4", 4},
		"v5p-32":        {"tpu-v5p-slice", "2x2x4", 4},
		"v6e-16":        {"tpu-v6e-slice", "4x4", 4},
		"tpu7x-16":      {"tpu7x", "2x2x2", 2},
		"v5litepod-256": {"tpu-v5-lite-podslice", "16x16", 64},
	}
	for name, want := range cases {
		s, err := ShapeForType(name)
		if err != nil {
			t.Errorf("ShapeForType(%q): %v", name, err)
			continue
		}
		if s.Accelerator != want.accelerator || s.Topology.String() != want.topology || s.Hosts != want.hosts {
			t.Errorf("ShapeForType(%q) = %s %s %d hosts, want %s %s %d", name, s.Accelerator, s.Topology, s.Hosts,
				want.accelerator, want.topology, want.hosts)
		}
	}
	for _, bad := range []string{"v4", "v4-17", "v9-16", "v4-x"} {
		if _, err := ShapeForType(bad); err == nil {
			t.Errorf("ShapeForType(%q) succeeded, want an error", bad)
		}
	}
}

func TestForMachineType(t *testing.T) {
	g, chips, err := ForMachineType("ct5lp-hightpu-8t")
	if err != nil || g.Name != "v5e" || chips != 8 {
		t.Fatalf("ForMachineType = %s %d %v, want v5e 8", g.Name, chips, err)
	}
}

func TestDynamicSlice(t *testing.T) {
	for _, tc := range []struct {
		topology string
		hosts    int
		sub      bool
		fail     string // a substring of the error; "" for a shape that forms
	}{
		{"4x4x4", 16, false, ""}, {"4x4x8", 32, false, ""}, {"16x24x24", 2304, false, ""},
		{"2x2x4", 4, true, ""}, {"2x4x4", 8, true, ""},
		{"2x2x2", 0, false, "stitched from 4x4x4 cubes"}, {"4x4x6", 0, false, "stitched from 4x4x4 cubes"},
		{"4x4", 0, false, "stitched from 4x4x4 cubes"}, {"24x24x24", 0, false, "at most 9216 chips"},
		{"8x4x4", 0, false, "non-decreasing order, as 4x4x8"},
	} {
		s, sub, err := DynamicSlice(tc.topology)
		if tc.fail != "" {
			if err == nil || !strings.Contains(err.Error(), tc.fail) {
				t.Errorf("%s: error %v, want one saying %q", tc.topology, err, tc.fail)
			}
			continue
		}
		if err != nil || sub != tc.sub || s.Hosts != tc.hosts {
			t.Errorf("%s: hosts %d, sub %v, err %v", tc.topology, s.Hosts, sub, err)
		}
	}
}
