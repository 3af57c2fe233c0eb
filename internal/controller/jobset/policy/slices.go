package policy

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/tpu"
)

// SlicesFormingReason: the JobSet's Slices exist and are not all Ready
// yet (or a failed one is being let go, to be formed again).
const SlicesFormingReason = "SlicesForming"

// slicesFormingRequeue is a backstop: a Slice's status change wakes the
// JobSet that owns it.
const slicesFormingRequeue = 10 * time.Second

// SliceObservation is what a decision of a JobSet with dynamic slices
// sees (nil: the manager forms no slices, DynamicSlicing off).
type SliceObservation struct {
	// Mine are the JobSet's Slices, by the Job they were formed for.
	Mine map[string]SliceFact
	// Cubes are the cluster's sub-blocks, supplied when the decision
	// without them asked (Plan.NeedsCubes).
	Cubes []slicing.Cube
}

// SliceFact is one Slice of the JobSet.
type SliceFact struct {
	Name       string
	Partitions []string
	// Quarters are a sub-slice's quarters of its one partition (0: a
	// super-slice, whole partitions).
	Quarters uint8
	Ready    bool
	// Failed: Ready is False for good (reason FAILED): it is let go and
	// formed again from healthy cubes.
	Failed  bool
	Message string
	// ForKueue: Kueue's admission check formed it from the hosts Kueue
	// chose (slicecheck): it is the check's while the JobSet is
	// suspended, and when it fails the check has Kueue requeue the
	// Workload instead of this stage forming it again.
	ForKueue bool
}

// slicesStage gives each dynamic-slice Job the plan starts (GKE's
// slice-topology annotation) a Slice of its own, all of the JobSet's at
// once or none: it forms the missing ones from free cubes (Plan.CreateSlices;
// a decision without the cubes asks for them, Plan.NeedsCubes), lets failed
// ones go, and starts the Jobs, pinned to their Slices' hosts, only once
// every Slice is Ready. Until then nothing of the attempt starts, and a
// JobSet whose slices cannot form holds no cube.
func slicesStage(d *decision) bool {
	so, p := d.o.Slices, &d.p
	if so == nil || d.suspended {
		return false
	}
	starting := dynamicJobs(p.Create, p.Resume)
	if len(starting) == 0 {
		return false
	}
	gang := append(slices.Clone(starting), dynamicJobs(p.Pending)...)
	var wants []slicing.Want
	notReady, why := 0, ""
	for _, j := range gang {
		s, ok := so.Mine[j.Name]
		switch {
		case !ok:
			wants = append(wants, slicing.Want{Name: j.Name, Topology: sliceTopology(j)})
		case s.Failed && s.ForKueue:
			notReady++
			why = cmp.Or(why, s.Name+": "+s.Message+"; Kueue requeues the Workload (admission check "+slicev1beta1.AdmissionCheckControllerName+") and it is formed again from the hosts Kueue chooses")
		case s.Failed:
			p.DeleteSlices = append(p.DeleteSlices, s.Name)
			why = cmp.Or(why, s.Name+": "+s.Message+"; it is formed again from healthy cubes")
		case !s.Ready:
			notReady++
		}
	}
	if len(wants) > 0 && len(p.DeleteSlices) == 0 && !formSlices(d, wants) {
		return false
	}
	if waiting := notReady + len(p.CreateSlices) + len(p.DeleteSlices); waiting > 0 {
		holdAttempt(p, slicesFormingRequeue)
		d.e.put(TopologyAssigned, metav1.ConditionFalse, SlicesFormingReason, formingMessage(len(gang), waiting, why), "")
		return false
	}
	var assigned []string
	for _, j := range starting {
		s := so.Mine[j.Name]
		slicing.Pin(j, s.Name, s.Partitions, slicing.QuarterHosts(s.Quarters)) // no hosts for a super-slice
		assigned = append(assigned, sliceAssignment(j.Name, s.Name, s.Partitions))
	}
	sort.Strings(assigned)
	d.e.set(TopologyAssigned, metav1.ConditionTrue, api.DomainsAssignedReason, slicesAssignedMessage(assigned), "") // no event: the condition says it
	return false
}

// formSlices forms the wanted Slices from the observed cubes (asking for
// them first): false when the decision stops here, the cubes not observed
// yet or too few free (then the JobSet waits, queued, holding none).
func formSlices(d *decision, wants []slicing.Want) bool {
	so, p := d.o.Slices, &d.p
	if so.Cubes == nil {
		p.NeedsCubes = true
		return false
	}
	formed := slicing.Form(wants, so.Cubes)
	if formed.Cubes == nil {
		// Queued with placement, so that a cube freed up wakes it.
		p.WaitForDomains = &placement.Waiter{JobSet: d.js.Namespace + "/" + d.js.Name, Key: gke.PartitionCubeLabel, Created: d.js.CreationTimestamp.Time}
		holdAttempt(p, waitingRequeue)
		d.e.put(TopologyAssigned, metav1.ConditionFalse, api.InsufficientCapacityReason, formed.Why, corev1.EventTypeWarning)
		return false
	}
	for _, w := range wants {
		p.CreateSlices = append(p.CreateSlices, slicing.NewSlice(slicing.OwnerOf(d.js), w, formed.Cubes[w.Name], formed.Quarters[w.Name]))
	}
	p.HoldDomains = map[string]map[string]string{} // off the queue: its Slices hold its cubes
	return true
}

// holdAttempt starts nothing of the attempt yet and looks again after wait.
func holdAttempt(p *Plan, wait time.Duration) {
	p.Create, p.Resume = nil, nil
	requeue(p, wait)
}

func formingMessage(slices, waiting int, why string) string {
	msg := fmt.Sprintf("%d of the JobSet's %d Slices are not Ready yet: its Jobs start once all are", waiting, slices)
	if why != "" {
		msg += "; failed: " + why
	}
	return msg
}

// sliceAssignment is one Job's part of the Slices' placement message.
func sliceAssignment(job, slice string, partitions []string) string {
	return fmt.Sprintf("%s=%s (%s)", job, slice, strings.Join(partitions, "+"))
}

func slicesAssignedMessage(assigned []string) string {
	return "each child Job has its own Slice: " + abbreviate(assigned)
}

func abbreviate(items []string) string {
	if len(items) > 4 {
		return strings.Join(items[:4], ", ") + fmt.Sprintf(", ... (%d in all)", len(items))
	}
	return strings.Join(items, ", ")
}

// dynamicJobs are the Jobs of lists whose pods ask for a dynamic slice.
func dynamicJobs(lists ...[]*batchv1.Job) []*batchv1.Job {
	var out []*batchv1.Job
	for _, l := range lists {
		for _, j := range l {
			if slicing.Asks(&j.Spec.Template) {
				out = append(out, j)
			}
		}
	}
	return out
}

// sliceTopology is the shape a Job's pods ask for (nil when it does not
// parse; admission refuses such a JobSet, and Form says why).
func sliceTopology(j *batchv1.Job) tpu.Topology {
	t, _ := tpu.ParseTopology(j.Spec.Template.Annotations[gke.SliceTopologyAnnotation])
	return t
}

// releaseSlices lets every Slice of a finished or suspended JobSet go.
func releaseSlices(d *decision) {
	so := d.o.Slices
	if so == nil {
		return
	}
	_, done := finished(&d.p.Status)
	if done == nil && !d.suspended {
		return
	}
	for _, s := range so.Mine {
		// Suspended by Kueue, a JobSet's Slices for its admission are
		// the check's.
		if done == nil && s.ForKueue {
			continue
		}
		d.p.DeleteSlices = append(d.p.DeleteSlices, s.Name)
	}
	sort.Strings(d.p.DeleteSlices)
}
