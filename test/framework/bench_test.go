package framework

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestSamples(t *testing.T) {
	body := []byte(`# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",verb="POST",resource="pods",subresource=""} 12
apiserver_request_total{code="404",verb="DELETE",resource="pods",subresource=""} 3e+00
apiserver_request_total_other{code="200"} 5
multislice_jobset_status_writes_total{changed="TopologyAssigned+counts"} 310
multislice_jobset_status_writes_total{changed="counts"} 1.5e+03
`)
	for _, tc := range []struct {
		metric string
		want   []sample
	}{
		{"apiserver_request_total", []sample{
			{map[string]string{"code": "201", "verb": "POST", "resource": "pods", "subresource": ""}, 12},
			{map[string]string{"code": "404", "verb": "DELETE", "resource": "pods", "subresource": ""}, 3},
		}},
		{"multislice_jobset_status_writes_total", []sample{
			{map[string]string{"changed": "TopologyAssigned+counts"}, 310},
			{map[string]string{"changed": "counts"}, 1500},
		}},
		{"missing_total", nil},
	} {
		if got := samples(body, tc.metric); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("samples(%s) = %v, want %v", tc.metric, got, tc.want)
		}
	}
}

func TestWaitStill(t *testing.T) {
	ctx := context.Background()
	constant := func(context.Context) (int, error) { return 7, nil }
	n := 0
	moving := func(context.Context) (int, error) { n++; return n, nil }
	broken := func(context.Context) (int, error) { return 0, errors.New("no metrics") }
	for _, tc := range []struct {
		name  string
		count func(context.Context) (int, error)
		want  bool
	}{
		{"a count that stops", constant, true},
		{"a count that keeps moving", moving, false},
		{"a count that cannot be read", broken, false},
	} {
		if got := WaitStill(ctx, tc.count, 0, 3*time.Second); got != tc.want {
			t.Errorf("%s: WaitStill = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWritesSince(t *testing.T) {
	before := map[string]int{"patch pods/status": 10, "create events": 5}
	after := map[string]int{"patch pods/status": 15, "patch pods/status 422": 2, "create events": 9, "update leases": 40, "create ": 1}
	total, by := WritesSince(before, after, func(resource string) bool { return resource == "leases" })
	want := map[string]int{"patch pods/status": 5, "patch pods/status 422": 2, "create events": 4, "create ": 1}
	if total != 12 || !reflect.DeepEqual(by, want) {
		t.Errorf("WritesSince = %d, %v; want 12, %v", total, by, want)
	}
}
