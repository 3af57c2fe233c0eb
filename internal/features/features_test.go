package features

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Gates
		err  string
	}{
		{"", Gates{}, ""},
		{"RestartJob=true", Gates{RestartJob: true}, ""},
		{"ElasticJobSet=true, InPlaceRestart=true,ExecutionAttemptsTracking=true", Gates{ElasticJobSet: true, InPlaceRestart: true, ExecutionAttemptsTracking: true}, ""},
		{"RestartJob", Gates{}, `"RestartJob": want Name=true|false`},
		{"RestartJob=yes", Gates{}, "want Name=true|false"},
		{"JobSetActiveDeadlineSeconds=true", Gates{ActiveDeadlineSeconds: true}, ""},
		{"Nope=true", Gates{}, "ElasticJobSet, ExecutionAttemptsTracking, InPlaceRestart, JobSetActiveDeadlineSeconds, JobSetWorkloadAwareSchedulingAPI, MutablePodResourcesForSuspendedJobSets, RestartBudgets, RestartJob"},
	} {
		got, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestHelpNamesEveryGate(t *testing.T) {
	h := Help()
	for _, g := range All {
		if !strings.Contains(h, g.Name+"=true|false") {
			t.Errorf("help does not document %s", g.Name)
		}
	}
}
