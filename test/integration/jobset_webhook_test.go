package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/testobj"
)

// tpuSlices makes replicated job 1 (2 replicas of 2 pods) a v4 TPU slice.
func tpuSlices(js *api.JobSet, topology, chips string, backoff int32) {
	spec := &js.Spec.ReplicatedJobs[1].Template.Spec
	spec.BackoffLimit = ptr.To(backoff)
	testobj.TPU(&spec.Template.Spec, "tpu-v4-podslice", topology, chips)
}

// collectWarnings keeps the apiserver's Warning headers (admission warnings).
type collectWarnings struct {
	mu    sync.Mutex
	texts []string
}

func (w *collectWarnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

func TestJobSetWebhook(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	t.Run("defaults", func(t *testing.T) {
		js := testobj.NewJobSet(ns, "defaults").ReplicatedJob("w", 1, 1).FailurePolicy(1,
			api.FailurePolicyRule{Action: api.FailJobSet}, api.FailurePolicyRule{Action: api.RestartJobSet}).Obj()
		js.Spec.ReplicatedJobs[0].Template.Spec.CompletionMode = nil
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.RestartPolicy = ""
		js.Spec.ReplicatedJobs[0].Replicas = 0
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		got := env.Get(t, ns, "defaults")
		s := got.Spec
		rj := s.ReplicatedJobs[0]
		checks := map[string]bool{
			"successPolicy All":               s.SuccessPolicy != nil && s.SuccessPolicy.Operator == api.OperatorAll,
			"startupPolicy AnyOrder":          s.StartupPolicy != nil && s.StartupPolicy.StartupPolicyOrder == api.AnyOrder,
			"enableDNSHostnames true":         s.Network != nil && ptr.Deref(s.Network.EnableDNSHostnames, false),
			"publishNotReadyAddresses true":   s.Network != nil && ptr.Deref(s.Network.PublishNotReadyAddresses, false),
			"completionMode Indexed":          ptr.Deref(rj.Template.Spec.CompletionMode, "") == batchv1.IndexedCompletion,
			"restartPolicy OnFailure":         rj.Template.Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyOnFailure,
			"groupName default":               rj.GroupName == "default",
			"restartStrategy Recreate":        s.FailurePolicy.RestartStrategy == api.Recreate,
			"rule names failurePolicyRule<i>": s.FailurePolicy.Rules[0].Name == "failurePolicyRule0" && s.FailurePolicy.Rules[1].Name == "failurePolicyRule1",
		}
		for what, ok := range checks {
			if !ok {
				t.Errorf("not defaulted: %s (spec %+v)", what, s)
			}
		}
	})

	t.Run("upstream-shaped examples and the seed are accepted", func(t *testing.T) {
		files, _ := filepath.Glob("../testdata/upstream-shaped/*.yaml")
		files = append(files, "../../examples/seed-multislice-job.yaml")
		if len(files) < 20 {
			t.Fatalf("found only %d example files", len(files))
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var js api.JobSet
			if err := yaml.UnmarshalStrict(data, &js); err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			js.Namespace = ns
			if err := env.Client.Create(ctx, &js, client.DryRunAll); err != nil {
				t.Errorf("%s refused: %v", filepath.Base(f), err)
			}
		}
	})

	// Each invalid variant is refused with a message naming the field.
	base := func() *api.JobSet {
		return testobj.NewJobSet(ns, "bad").ReplicatedJob("leader", 1, 1).ReplicatedJob("workers", 2, 2).Obj()
	}
	refusals := []struct {
		name  string
		edit  func(*api.JobSet)
		field string
		hint  string
	}{
		{"subdomain", func(js *api.JobSet) { js.Spec.Network = &api.Network{Subdomain: "Bad_Sub"} }, "spec.network.subdomain", "lowercase"},
		{"managedBy", func(js *api.JobSet) { js.Spec.ManagedBy = ptr.To("no-slash") }, "spec.managedBy", "domain-prefixed path"},
		{"long name", func(js *api.JobSet) { js.Name = strings.Repeat("a", 60) }, "spec.replicatedJobs[0].name", "shorten the JobSet or replicated job name"},
		{"long pod name", func(js *api.JobSet) { js.Name = strings.Repeat("a", 47) }, "spec.replicatedJobs[1].name", "pod name"},
		{"groupName", func(js *api.JobSet) { js.Spec.ReplicatedJobs[0].GroupName = "Not_DNS" }, "spec.replicatedJobs[0].groupName", "DNS-1035"},
		{"dependsOn first", func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[0].DependsOn = []api.DependsOn{{Name: "workers", Status: api.DependencyReady}}
		}, "spec.replicatedJobs[0].dependsOn", "first replicated job cannot depend"},
		{"dependsOn unknown", func(js *api.JobSet) {
			js.Spec.ReplicatedJobs[1].DependsOn = []api.DependsOn{{Name: "nope", Status: api.DependencyReady}}
		}, "spec.replicatedJobs[1].dependsOn[0].name", "listed earlier"},
		{"dependsOn and InOrder", func(js *api.JobSet) {
			js.Spec.StartupPolicy = &api.StartupPolicy{StartupPolicyOrder: api.InOrder}
			js.Spec.ReplicatedJobs[1].DependsOn = []api.DependsOn{{Name: "leader", Status: api.DependencyReady}}
		}, "spec", "StartupPolicy and DependsOn APIs are mutually exclusive"},
		{"success target", func(js *api.JobSet) {
			js.Spec.SuccessPolicy = &api.SuccessPolicy{Operator: api.OperatorAll, TargetReplicatedJobs: []string{"ghost"}}
		}, "spec.successPolicy.targetReplicatedJobs[0]", "names no replicated job"},
		{"rule name", func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{Rules: []api.FailurePolicyRule{{Name: "1bad", Action: api.FailJobSet}}}
		}, "spec.failurePolicy.rules[0].name", "must start with a letter"},
		{"duplicate rule", func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{Rules: []api.FailurePolicyRule{{Name: "a", Action: api.FailJobSet}, {Name: "a", Action: api.FailJobSet}}}
		}, "spec.failurePolicy.rules[1].name", "Duplicate value"},
		{"rule reason", func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{Rules: []api.FailurePolicyRule{{Name: "a", Action: api.FailJobSet, OnJobFailureReasons: []string{"OOMKilled"}}}}
		}, "spec.failurePolicy.rules[0].onJobFailureReasons[0]", "BackoffLimitExceeded"},
		{"rule pattern", func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{Rules: []api.FailurePolicyRule{{Name: "a", Action: api.FailJobSet, OnJobFailureMessagePatterns: []string{"(unclosed"}}}}
		}, "spec.failurePolicy.rules[0].onJobFailureMessagePatterns[0]", "not a valid RE2"},
		{"rule target", func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{Rules: []api.FailurePolicyRule{{Name: "a", Action: api.FailJobSet, TargetReplicatedJobs: []string{"ghost"}}}}
		}, "spec.failurePolicy.rules[0].targetReplicatedJobs[0]", "names no replicated job"},
		{"RestartJob without gate", func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{Rules: []api.FailurePolicyRule{{Name: "a", Action: api.RestartJob}}}
		}, "spec.failurePolicy.rules[0].action", "RestartJob feature gate"},
		{"InPlaceRestart without gate", func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{RestartStrategy: api.InPlaceRestart}
		}, "spec.failurePolicy.restartStrategy", "InPlaceRestart feature gate"},
		{"coordinator job", func(js *api.JobSet) { js.Spec.Coordinator = &api.Coordinator{ReplicatedJob: "ghost"} }, "spec.coordinator.replicatedJob", "names no replicated job"},
		{"coordinator index", func(js *api.JobSet) { js.Spec.Coordinator = &api.Coordinator{ReplicatedJob: "workers", JobIndex: 2} }, "spec.coordinator.jobIndex", "must be in [0, 2)"},
		{"coordinator pod", func(js *api.JobSet) { js.Spec.Coordinator = &api.Coordinator{ReplicatedJob: "workers", PodIndex: 5} }, "spec.coordinator.podIndex", "must be in [0, 2)"},
		{"claim not mounted", func(js *api.JobSet) {
			js.Spec.VolumeClaimPolicies = []api.VolumeClaimPolicy{{Templates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}}
		}, "spec.volumeClaimPolicies[0].templates[0].metadata.name", "no container mounts it"},
		{"claim namespace", func(js *api.JobSet) {
			js.Spec.VolumeClaimPolicies = []api.VolumeClaimPolicy{{Templates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "x"}}}}}
		}, "spec.volumeClaimPolicies[0]", "namespace cannot be set"},
		{"negative replicas", func(js *api.JobSet) { js.Spec.ReplicatedJobs[0].Replicas = -1 }, "spec.replicatedJobs[0].replicas", "greater than or equal to 0"},
		{"bad restart strategy", func(js *api.JobSet) {
			js.Spec.FailurePolicy = &api.FailurePolicy{RestartStrategy: "Sometimes"}
		}, "spec.failurePolicy.restartStrategy", "supported values"},
		{"bad success operator", func(js *api.JobSet) { js.Spec.SuccessPolicy = &api.SuccessPolicy{Operator: "Most"} }, "spec.successPolicy.operator", "supported values"},
		{"TPU parallelism", func(js *api.JobSet) { tpuSlices(js, "2x2x4", "4", 0) }, "spec.replicatedJobs[1].template.spec.parallelism", "has 4 hosts: set parallelism to 4"},
		{"TPU chips", func(js *api.JobSet) { tpuSlices(js, "2x2x2", "8", 0) }, "limits[google.com/tpu]", "request google.com/tpu: 4"},
		{"NonIndexed exclusive placement", func(js *api.JobSet) {
			tpuSlices(js, "2x2x2", "4", 0)
			js.Annotations = map[string]string{api.ExclusiveKey: "cloud.google.com/gke-nodepool"}
			js.Spec.ReplicatedJobs[1].Template.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
		}, "spec.replicatedJobs[1].template.spec.completionMode", "needs completionMode: Indexed"},
		{"TPU pair", func(js *api.JobSet) { tpuSlices(js, "4x4", "4", 0) }, "nodeSelector[cloud.google.com/gke-tpu-topology]", "v4 topologies have 3 dimensions"},
		{"negative ttl", func(js *api.JobSet) { js.Spec.TTLSecondsAfterFinished = ptr.To(int32(-1)) }, "spec.ttlSecondsAfterFinished", "greater than or equal to 0"},
		{"unnamed replicated job", func(js *api.JobSet) { js.Spec.ReplicatedJobs[0].Name = "" }, "spec.replicatedJobs[0].name", "name the replicated job"},
		{"negative maxRestarts", func(js *api.JobSet) { js.Spec.FailurePolicy = &api.FailurePolicy{MaxRestarts: -1} }, "spec.failurePolicy.maxRestarts", "must be 0 or more"},
		{"exclusive key not a label key", func(js *api.JobSet) {
			js.Annotations = map[string]string{api.ExclusiveKey: "not a key!"}
		}, "metadata.annotations[alpha.jobset.sigs.k8s.io/exclusive-topology]", "must be a node label key"},
	}
	// What GKE runs is admitted; our advice comes back as warnings.
	advice := []struct {
		name, hint string
		edit       func(*api.JobSet)
	}{
		{"TPU backoffLimit", "spec.replicatedJobs[1].template.spec.backoffLimit: a failed pod is retried inside its slice, up to 2 times",
			func(js *api.JobSet) { tpuSlices(js, "2x2x2", "4", 2) }},
		{"TPU single-host multislice", "2 slices of v4-8, one host each", func(js *api.JobSet) {
			tpuSlices(js, "2x2x1", "4", 0)
			js.Spec.ReplicatedJobs[1].Template.Spec.Parallelism, js.Spec.ReplicatedJobs[1].Template.Spec.Completions = ptr.To(int32(1)), ptr.To(int32(1))
		}},
	}
	for _, a := range advice {
		t.Run("advises "+a.name, func(t *testing.T) {
			js := base()
			a.edit(js)
			warnings := &collectWarnings{}
			cfg := rest.CopyConfig(env.Config)
			cfg.WarningHandler = warnings
			c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, js, client.DryRunAll); err != nil {
				t.Fatalf("refused what GKE runs: %v", err)
			}
			if !slices.ContainsFunc(warnings.texts, func(w string) bool { return strings.Contains(w, a.hint) }) {
				t.Errorf("warnings %q, want one with %q", warnings.texts, a.hint)
			}
		})
	}

	for _, r := range refusals {
		t.Run("refuses "+r.name, func(t *testing.T) {
			js := base()
			r.edit(js)
			err := env.Client.Create(ctx, js, client.DryRunAll)
			if err == nil {
				t.Fatal("accepted")
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), r.field) || !strings.Contains(err.Error(), r.hint) {
				t.Errorf("error %q\nwant 422 Invalid naming %q with %q", err, r.field, r.hint)
			}
		})
	}

	t.Run("updates", func(t *testing.T) {
		js := testobj.NewJobSet(ns, "immutable").ReplicatedJob("w", 2, 1).FailurePolicy(1).Obj()
		if err := env.Client.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		updates := []struct {
			name string
			edit func(*api.JobSet)
			want string
		}{
			{"replicas", func(js *api.JobSet) { js.Spec.ReplicatedJobs[0].Replicas = 3 }, "spec.replicatedJobs: Forbidden: field is immutable; while the JobSet is suspended"},
			{"nodeSelector while running", func(js *api.JobSet) {
				js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector = map[string]string{"a": "b"}
			}, "spec.replicatedJobs"},
			{"managedBy", func(js *api.JobSet) { js.Spec.ManagedBy = ptr.To("example.com/other") }, "spec.managedBy"},
			{"failurePolicy", func(js *api.JobSet) { js.Spec.FailurePolicy.MaxRestarts = 9 }, "Value is immutable"},
		}
		for _, u := range updates {
			var err error
			for try := 0; try < 5; try++ { // the controller writes status meanwhile
				got := env.Get(t, ns, "immutable")
				u.edit(got)
				if err = env.Client.Update(ctx, got, client.DryRunAll); !apierrors.IsConflict(err) {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), u.want) {
				t.Errorf("%s: error %v, want it to contain %q", u.name, err, u.want)
			}
		}
		got := env.Get(t, ns, "immutable")
		got.Spec.Suspend = ptr.To(true)
		got.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector = map[string]string{"a": "b"}
		if err := env.Client.Update(ctx, got, client.DryRunAll); err != nil {
			t.Errorf("suspending with a new nodeSelector must be allowed: %v", err)
		}
	})
}
