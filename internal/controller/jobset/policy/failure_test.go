package policy

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/testobj"
)

// failedJob is a Job of replicated job rjob that failed ago before now with
// reason and message.
func failedJob(name, rjob, reason, message string, ago time.Duration) *batchv1.Job {
	return testobj.NewJob("", name).Label(api.ReplicatedJobNameKey, rjob).Failed(reason, message, now.Add(-ago)).Obj()
}

func TestMatchRule(t *testing.T) {
	backoff := failedJob("js-w-0", "w", "BackoffLimitExceeded", "Job has reached the specified backoff limit", 1*time.Second)
	earlier := failedJob("js-w-1", "w", "BackoffLimitExceeded", "Job has reached the specified backoff limit", 5*time.Second)
	podFailure := failedJob("js-driver-0", "driver", "PodFailurePolicy", "Container main for pod x failed with exit code 42 matching FailJob rule at index 0", 2*time.Second)
	deadline := failedJob("js-w-2", "w", "DeadlineExceeded", "Job was active longer than specified deadline", 3*time.Second)
	unlabelled := testobj.NewJob("", "other").Failed("BackoffLimitExceeded", "", now).Obj()

	rule := func(name string, edit func(*api.FailurePolicyRule)) api.FailurePolicyRule {
		r := api.FailurePolicyRule{Name: name, Action: api.RestartJobSet}
		if edit != nil {
			edit(&r)
		}
		return r
	}
	reasons := func(rs ...string) func(*api.FailurePolicyRule) {
		return func(r *api.FailurePolicyRule) { r.OnJobFailureReasons = rs }
	}
	patterns := func(ps ...string) func(*api.FailurePolicyRule) {
		return func(r *api.FailurePolicyRule) { r.OnJobFailureMessagePatterns = ps }
	}
	targets := func(ts ...string) func(*api.FailurePolicyRule) {
		return func(r *api.FailurePolicyRule) { r.TargetReplicatedJobs = ts }
	}

	for _, c := range []struct {
		name      string
		rules     []api.FailurePolicyRule
		failed    []*batchv1.Job
		wantRule  string // "" no rule matches
		wantFirst string
	}{
		{"no rules", nil, []*batchv1.Job{backoff}, "", ""},
		{"a rule with no filters matches any failure", []api.FailurePolicyRule{rule("any", nil)}, []*batchv1.Job{backoff}, "any", "js-w-0"},
		{"the earliest failed Job among those matched", []api.FailurePolicyRule{rule("any", nil)}, []*batchv1.Job{backoff, earlier}, "any", "js-w-1"},
		{"rules are tried in order: the first that matches wins",
			[]api.FailurePolicyRule{rule("deadline", reasons("DeadlineExceeded")), rule("any", nil)}, []*batchv1.Job{backoff, deadline}, "deadline", "js-w-2"},
		{"a reason not listed does not match", []api.FailurePolicyRule{rule("pfp", reasons("PodFailurePolicy"))}, []*batchv1.Job{backoff}, "", ""},
		{"reason and message pattern both must match",
			[]api.FailurePolicyRule{rule("exit42", func(r *api.FailurePolicyRule) {
				r.OnJobFailureReasons, r.OnJobFailureMessagePatterns = []string{"PodFailurePolicy"}, []string{"exit code 4[0-9]"}
			})}, []*batchv1.Job{backoff, podFailure}, "exit42", "js-driver-0"},
		{"a message pattern alone", []api.FailurePolicyRule{rule("deadline", patterns("longer than"))}, []*batchv1.Job{backoff, deadline}, "deadline", "js-w-2"},
		{"any of several patterns", []api.FailurePolicyRule{rule("p", patterns("nomatch", "backoff limit$"))}, []*batchv1.Job{backoff}, "p", "js-w-0"},
		{"an invalid pattern never matches (the webhook refuses it)", []api.FailurePolicyRule{rule("bad", patterns("("))}, []*batchv1.Job{backoff}, "", ""},
		{"target replicated jobs", []api.FailurePolicyRule{rule("driver", targets("driver"))}, []*batchv1.Job{backoff, podFailure}, "driver", "js-driver-0"},
		{"target not among the failed", []api.FailurePolicyRule{rule("ps", targets("ps"))}, []*batchv1.Job{backoff, podFailure}, "", ""},
		{"a Job without its replicated job label matches no rule", []api.FailurePolicyRule{rule("any", nil)}, []*batchv1.Job{unlabelled}, "", ""},
		{"a Job not failed matches no rule", []api.FailurePolicyRule{rule("any", nil)},
			[]*batchv1.Job{testobj.NewJob("", "running").Label(api.ReplicatedJobNameKey, "w").Obj()}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, first := matchRule(c.rules, c.failed)
			gotRule, gotFirst := "", ""
			if r != nil {
				gotRule = r.Name
			}
			if first != nil {
				gotFirst = first.Name
			}
			if gotRule != c.wantRule || gotFirst != c.wantFirst {
				t.Fatalf("matchRule = %q, %q; want %q, %q", gotRule, gotFirst, c.wantRule, c.wantFirst)
			}
		})
	}
}
