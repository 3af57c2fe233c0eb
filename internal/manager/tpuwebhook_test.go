package manager

import "testing"

func TestStandAside(t *testing.T) {
	for _, tc := range []struct {
		flag, version string
		want, err     bool
	}{
		{"auto", "v1.33.5-gke.1162000", true, false},
		{"auto", "v1.37.2", false, false},
		{"", "v1.37.2-eks-abc", false, false},
		{"true", "v1.33.5-gke.1162000", false, false},
		{"false", "v1.37.2", true, false},
		{"maybe", "v1.37.2", false, true},
	} {
		got, err := standAside(tc.flag, tc.version)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("standAside(%q, %q) = %v, %v; want %v, error %v", tc.flag, tc.version, got, err, tc.want, tc.err)
		}
	}
}
