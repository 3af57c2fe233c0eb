package slicecheck

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// workload is a Workload as Kueue v0.17 writes it (v1beta2), decoded as
// the API server's JSON is.
func workload(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	return u
}

const admitted = `{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
 "metadata": {"name": "jobset-dyn-1a2b3", "namespace": "default",
   "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "dyn", "uid": "u"}]},
 "status": {
  "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "False"}],
  "admissionChecks": [{"name": "other", "state": "Ready", "message": ""}, {"name": "ss-kueue-operator", "state": "Pending", "message": ""}],
  "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [
   {"name": "slice", "count": 6, "topologyAssignment": {
     "levels": ["cloud.google.com/gce-topology-block", "cloud.google.com/gke-tpu-partition-4x4x4-id", "kubernetes.io/hostname"],
     "slices": [
      {"domainCount": 2, "valuesPerLevel": [{"universal": "block-1"}, {"universal": "block-1-sb-0"},
        {"individual": {"prefix": "gke-block-1-sb-0-", "roots": ["0", "1"]}}], "podCounts": {"universal": 1}},
      {"domainCount": 2, "valuesPerLevel": [{"universal": "block-1"}, {"universal": "block-1-sb-1"},
        {"individual": {"roots": ["h7", "h9"], "suffix": ".local"}}], "podCounts": {"individual": [3, 1]}}]}},
   {"name": "loader", "count": 1}]}}}`

func TestHostsOfAssignment(t *testing.T) {
	w := workload(t, admitted)
	hosts, err := assignedHosts(w, "slice")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gke-block-1-sb-0-0", "gke-block-1-sb-0-1", "h7.local", "h7.local", "h7.local", "h9.local"}
	if !reflect.DeepEqual(hosts, want) {
		t.Errorf("hosts %v, want %v", hosts, want)
	}
	if hosts, err := assignedHosts(w, "loader"); hosts != nil || err != nil {
		t.Errorf("a pod set without a topology: %v, %v", hosts, err)
	}
	bad := workload(t, strings.Replace(admitted, `"kubernetes.io/hostname"`, `"rack"`, 1))
	if _, err := assignedHosts(bad, "slice"); err == nil || !strings.Contains(err.Error(), "not kubernetes.io/hostname") {
		t.Errorf("a topology not ending at hosts: %v", err)
	}
}

func TestCheckState(t *testing.T) {
	w := workload(t, admitted)
	if got := ownerJobSet(w); got != "dyn" {
		t.Errorf("owner %q", got)
	}
	if !conditionTrue(w, "QuotaReserved") || conditionTrue(w, "Admitted") {
		t.Error("conditions misread")
	}
	ours := map[string]bool{"ss-kueue-operator": true}
	name, state, ok := checkState(w, ours)
	if !ok || name != "ss-kueue-operator" || state != Pending {
		t.Fatalf("check %q %q %v", name, state, ok)
	}
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	if !setCheckState(w, name, Ready, "Slices Ready", now) || setCheckState(w, name, Ready, "Slices Ready", now) {
		t.Fatal("set: changed twice, or not at all")
	}
	if _, state, _ := checkState(w, ours); state != Ready {
		t.Errorf("state after set %q", state)
	}
	list, _, _ := unstructured.NestedSlice(w.Object, "status", "admissionChecks")
	if m := list[1].(map[string]any); m["lastTransitionTime"] != "2026-12-05T08:00:00Z" || m["message"] != "Slices Ready" {
		t.Errorf("check written as %v", m)
	}
	if m := list[0].(map[string]any); m["state"] != "Ready" || m["lastTransitionTime"] != nil {
		t.Errorf("another controller's check touched: %v", m)
	}
}
