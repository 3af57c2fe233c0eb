package policy

import (
	"maps"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/naming"
)

// jobIdentity is what places one child Job within its JobSet.
type jobIdentity struct {
	rjob                 *api.ReplicatedJob
	index, globalIndex   int
	globalReplicas       int
	groupReplicas, group int // group: index within the group
}

// identities enumerates every child Job of the spec in order.
func identities(js *api.JobSet) []jobIdentity {
	global, groups := 0, map[string]int{}
	for _, rj := range js.Spec.ReplicatedJobs {
		global += int(rj.Replicas)
		groups[groupName(&rj)] += int(rj.Replicas)
	}
	var out []jobIdentity
	next, nextInGroup := 0, map[string]int{}
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		g := groupName(rj)
		for idx := 0; idx < int(rj.Replicas); idx++ {
			out = append(out, jobIdentity{rjob: rj, index: idx, globalIndex: next, globalReplicas: global,
				groupReplicas: groups[g], group: nextInGroup[g]})
			next++
			nextInGroup[g]++
		}
	}
	return out
}

func groupName(rj *api.ReplicatedJob) string {
	if rj.GroupName == "" {
		return "default"
	}
	return rj.GroupName
}

// keys are the labels and annotations upstream writes on each child Job
// and its pod template.
func keys(js *api.JobSet, id jobIdentity, jobName string, restartJobGate bool, execution *int32) map[string]string {
	k := map[string]string{
		api.JobSetNameKey:         js.Name,
		api.JobSetUIDKey:          string(js.UID),
		api.ReplicatedJobNameKey:  id.rjob.Name,
		api.RestartsKey:           strconv.Itoa(int(js.Status.Restarts)),
		api.ReplicatedJobReplicas: strconv.Itoa(int(id.rjob.Replicas)),
		api.GlobalReplicasKey:     strconv.Itoa(id.globalReplicas),
		api.JobIndexKey:           strconv.Itoa(id.index),
		api.JobKey:                naming.JobKey(js.Namespace, jobName),
		api.JobGlobalIndexKey:     strconv.Itoa(id.globalIndex),
		api.GroupNameKey:          groupName(id.rjob),
		api.GroupReplicasKey:      strconv.Itoa(id.groupReplicas),
		api.JobGroupIndexKey:      strconv.Itoa(id.group),
	}
	if restartJobGate {
		k[api.JobRestartsKey] = strconv.Itoa(int(jobRestarts(js, id.rjob.Name, id.index)))
	}
	if execution != nil {
		k[api.ExecutionAttemptKey] = strconv.Itoa(int(*execution))
	}
	if js.Spec.Coordinator != nil {
		k[api.CoordinatorKey] = naming.CoordinatorEndpoint(js)
	}
	return k
}

// constructJob builds child Job id from its template; execution is the
// execution attempt it belongs to (nil: not counted).
func constructJob(js *api.JobSet, id jobIdentity, restartJobGate bool, execution *int32) *batchv1.Job {
	rj := id.rjob
	name := naming.JobName(js.Name, rj.Name, id.index)
	k := keys(js, id, name, restartJobGate, execution)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       js.Namespace,
			Labels:          merge(rj.Template.Labels, k),
			Annotations:     merge(merge(rj.Template.Annotations, api.PlacementAnnotations(js, rj)), k),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(js, api.GroupVersion.WithKind("JobSet"))},
		},
		Spec: *rj.Template.Spec.DeepCopy(),
	}
	pod := &job.Spec.Template
	pod.Labels = merge(pod.Labels, k)
	pod.Annotations = merge(pod.Annotations, k)
	if dnsHostnames(js) {
		pod.Spec.Subdomain = naming.Subdomain(js)
	}
	job.Spec.Suspend = ptr.To(ptr.Deref(js.Spec.Suspend, false))
	ann := job.Annotations
	if _, exclusive := ann[api.ExclusiveKey]; exclusive {
		if _, nodeSelector := ann[api.NodeSelectorStrategyKey]; nodeSelector {
			pod.Spec.NodeSelector = merge(pod.Spec.NodeSelector, map[string]string{api.NamespacedJobKey: js.Namespace + "_" + name})
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: api.NoScheduleTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
			})
		}
	}
	addClaimVolumes(js, &pod.Spec)
	return job
}

// addClaimVolumes mounts each shared PVC into pods that have a container
// (or init container) mounting a volume of the claim template's name.
func addClaimVolumes(js *api.JobSet, spec *corev1.PodSpec) {
	for _, p := range js.Spec.VolumeClaimPolicies {
		for _, t := range p.Templates {
			if !mounts(spec, t.Name) {
				continue
			}
			spec.Volumes = append(spec.Volumes, corev1.Volume{
				Name: t.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: naming.PVCName(t.Name, js.Name),
				}},
			})
		}
	}
}

func mounts(spec *corev1.PodSpec, volume string) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				if m.Name == volume {
					return true
				}
			}
		}
	}
	return false
}

func dnsHostnames(js *api.JobSet) bool {
	return js.Spec.Network != nil && ptr.Deref(js.Spec.Network.EnableDNSHostnames, false)
}

// merge returns a new map with base overlaid by over.
func merge(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

// headlessService is the Service that gives pods their DNS names.
func headlessService(js *api.JobSet) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            naming.Subdomain(js),
			Namespace:       js.Namespace,
			Labels:          map[string]string{api.JobSetNameKey: js.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(js, api.GroupVersion.WithKind("JobSet"))},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{api.JobSetNameKey: js.Name},
			PublishNotReadyAddresses: ptr.Deref(js.Spec.Network.PublishNotReadyAddresses, true),
			Ports:                    servicePorts(js),
		},
	}
}

// servicePorts are the ports the pods' containers and sidecars declare,
// one per number and protocol (TCP when unset), named after the container
// port or, where that name is missing or taken, "<protocol>-<number>":
// a service mesh such as Istio routes only ports a Service declares, even
// a headless one (upstream #1300). None declared, none listed.
func servicePorts(js *api.JobSet) []corev1.ServicePort {
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	seen, names := map[key]bool{}, map[string]bool{}
	var out []corev1.ServicePort
	for _, rj := range js.Spec.ReplicatedJobs {
		spec := &rj.Template.Spec.Template.Spec
		containers := append([]corev1.Container(nil), spec.Containers...)
		for _, c := range spec.InitContainers {
			if ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways {
				containers = append(containers, c)
			}
		}
		for _, c := range containers {
			for _, p := range c.Ports {
				k := key{p.ContainerPort, p.Protocol}
				if k.protocol == "" {
					k.protocol = corev1.ProtocolTCP
				}
				if k.port <= 0 || seen[k] {
					continue
				}
				seen[k] = true
				name := p.Name
				if name == "" || names[name] {
					name = strings.ToLower(string(k.protocol)) + "-" + strconv.Itoa(int(k.port))
				}
				names[name] = true
				out = append(out, corev1.ServicePort{Name: name, Port: k.port, Protocol: k.protocol, TargetPort: intstr.FromInt32(k.port)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out
}

// claims are the shared PVCs of volumeClaimPolicies; only Delete-policy
// claims are owned by (and so deleted with) the JobSet.
func claims(js *api.JobSet) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, p := range js.Spec.VolumeClaimPolicies {
		owned := p.RetentionPolicy == nil || ptr.Deref(p.RetentionPolicy.WhenDeleted, api.RetentionPolicyDelete) == api.RetentionPolicyDelete
		for _, t := range p.Templates {
			pvc := t.DeepCopy()
			pvc.Name, pvc.Namespace = naming.PVCName(t.Name, js.Name), js.Namespace
			pvc.Labels = merge(pvc.Labels, map[string]string{api.JobSetNameKey: js.Name})
			pvc.ResourceVersion, pvc.UID = "", ""
			if owned {
				pvc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(js, api.GroupVersion.WithKind("JobSet"))}
			}
			out = append(out, pvc)
		}
	}
	return out
}

// serviceStage asks for the headless Service (when pods get DNS names and
// it is missing) and the shared claims.
func serviceStage(d *decision) bool {
	if dnsHostnames(d.js) && !d.o.ServiceExists {
		d.p.Service = headlessService(d.js)
	}
	d.p.Claims = claims(d.js)
	return false
}

// emptyStage: a JobSet with no replicated job. Upstream accepts it, gives
// it its Service and nothing else; say why nothing runs.
func emptyStage(d *decision) bool {
	if len(d.js.Spec.ReplicatedJobs) > 0 {
		return false
	}
	d.e.put(ChildJobsCreated, metav1.ConditionFalse, NoReplicatedJobsReason,
		"spec.replicatedJobs is empty: this JobSet has nothing to run and stays as it is (as upstream's does); delete it, or create it again with a replicated job", corev1.EventTypeWarning)
	return true
}

// ServiceName is the headless Service js's pods need, ok false when they
// get no DNS names: what the reconciler observes (Observed.ServiceExists).
func ServiceName(js *api.JobSet) (name string, ok bool) {
	return naming.Subdomain(js), dnsHostnames(js)
}
