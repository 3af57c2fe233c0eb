package jobset

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestQuantityErrors(t *testing.T) {
	const container = `{"spec":{"replicatedJobs":[{"template":{"spec":{"template":{"spec":{"containers":[{"name":"c","resources":%s}]}}}}}]}}`
	const path = "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources"
	cases := []struct {
		resources string
		want      []string
	}{
		{`{"limits":{"google.com/tpu":"4x"}}`, []string{path + `.limits[google.com/tpu]: Invalid value: "4x": not a quantity`}},
		{`{"limits":{"google.com/tpu":4,"cpu":"500m"},"requests":{"memory":"8Gi"}}`, nil},
		{`{"requests":{"cpu":"one","memory":"1Q"}}`, []string{path + `.requests[cpu]: Invalid value: "one"`, path + `.requests[memory]: Invalid value: "1Q"`}},
	}
	for _, c := range cases {
		var obj any
		if err := json.Unmarshal([]byte(strings.Replace(container, "%s", c.resources, 1)), &obj); err != nil {
			t.Fatal(err)
		}
		errs := quantityErrors(obj, nil)
		if len(errs) != len(c.want) {
			t.Errorf("%s: %v, want %d errors", c.resources, errs, len(c.want))
			continue
		}
		for i, want := range c.want {
			if !strings.Contains(errs[i].Error(), want) {
				t.Errorf("%s: error %d is %q, want it to contain %q", c.resources, i, errs[i].Error(), want)
			}
		}
	}
}

// A JobSet that does not decode is refused naming the field; one that does
// reaches the webhook behind.
func TestReadableNamesTheField(t *testing.T) {
	reached := false
	h := readable{admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		reached = true
		return admission.Allowed("")
	})}
	bad := `{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"x"},"spec":{"replicatedJobs":[{"name":"s","template":{"spec":{"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"google.com/tpu":"4x"}}}]}}}}}]}}`
	resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Name: "x", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(bad)}}})
	if resp.Allowed || reached || resp.Result == nil || !strings.Contains(resp.Result.Message, "containers[0].resources.limits[google.com/tpu]") {
		t.Errorf("bad quantity: allowed %v, reached %v, result %+v", resp.Allowed, reached, resp.Result)
	}
	good := strings.Replace(bad, `"4x"`, `"4"`, 1)
	resp = h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Name: "x", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(good)}}})
	if !resp.Allowed || !reached {
		t.Errorf("good quantity: allowed %v, reached %v", resp.Allowed, reached)
	}
}
