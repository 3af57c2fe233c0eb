package workload

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/tpu"
)

// Pathways' shape, as xpk renders it for `xpk workload create-pathways`:
// a head (the proxy and resource manager as sidecars, the user's JAX
// program as the main container) on a CPU pool, and one worker Job per
// TPU slice.
const (
	PathwaysHead   = "pathways-head"
	PathwaysWorker = "worker"
	// PathwaysCPUPool is the node pool xpk puts the head on.
	PathwaysCPUPool = "cpu-np"
	// XPKWorkloadLabel is xpk's label naming a workload.
	XPKWorkloadLabel = "xpk.google.com/workload"
	// ProxyPort, ResourceManagerPort and WorkerPort are Pathways' ports.
	ProxyPort, ResourceManagerPort, WorkerPort = 29000, 29001, 29005
	// StandInImage is the project's own image, which plays the proxy, the
	// resource manager and the workers (`multislice pathways-standin`)
	// where Pathways' own images are not given: they are not public.
	StandInImage = "ghcr.io/multislice/multislice:latest"
	// DefaultGCSLocation is xpk's default --pathways-gcs-location.
	DefaultGCSLocation = "gs://cloud-pathways-staging/tmp"
)

// PathwaysSpec is what a user says about a Pathways workload.
type PathwaysSpec struct {
	Name, Namespace string
	TPUType         string
	Slices          int
	// Image and Command are the user's JAX program, run in the head (none
	// with Headless: the user connects to the proxy from outside).
	Image, Command string
	Headless       bool
	// ProxyImage, ServerImage and WorkerImage are Pathways' images (""
	// plays them with StandInImage); WorkerImage defaults to ServerImage.
	ProxyImage, ServerImage, WorkerImage string
	GCSLocation                          string
	// ElasticSlices > 0 lets that many slices fail without failing the
	// workload; each worker Job then retries MaxSliceRestarts times per host.
	ElasticSlices, MaxSliceRestarts int
	// MaxRestarts are restarts of the whole JobSet before it fails. xpk
	// takes the flag and leaves it out of Pathways' JobSet (0: a worker
	// Job that fails fails the workload); ours writes it.
	MaxRestarts         int32
	Priority, QueueName string
	GracePeriod         int64
	Env                 map[string]string
}

// BuildPathways validates the spec and writes its JobSet in xpk's shape.
// Errors name the flag.
func BuildPathways(s PathwaysSpec) (*api.JobSet, error) {
	errs := checkShared("--workload", s.Name, s.Priority, s.QueueName, s.Env)
	shape, err := tpu.ShapeForType(s.TPUType)
	if err != nil {
		errs = append(errs, "--tpu-type: "+err.Error())
	}
	if s.Slices < 1 || s.Slices > MaxSlices {
		errs = append(errs, fmt.Sprintf("--num-slices: must be 1 to %d (got %d)", MaxSlices, s.Slices))
	}
	if !s.Headless && strings.TrimSpace(s.Command) == "" {
		errs = append(errs, "--command: required unless --headless, e.g. --command='python train.py'")
	}
	if s.ElasticSlices < 0 || s.ElasticSlices >= max(s.Slices, 1) {
		errs = append(errs, fmt.Sprintf("--elastic-slices: 0 to %d, fewer than --num-slices (got %d)", max(s.Slices-1, 0), s.ElasticSlices))
	}
	if s.MaxRestarts < 0 {
		errs = append(errs, "--max-restarts: must not be negative")
	}
	if s.MaxSliceRestarts < 0 {
		errs = append(errs, "--max-slice-restarts: must not be negative")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if s.GCSLocation == "" {
		s.GCSLocation = DefaultGCSLocation
	}
	labels := workloadLabels(s.Name, s.QueueName, s.Priority)
	labels[XPKWorkloadLabel] = s.Name
	js := &api.JobSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: api.GroupVersion.String(), Kind: "JobSet"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels},
		Spec: api.JobSetSpec{
			Coordinator:    &api.Coordinator{ReplicatedJob: PathwaysHead},
			Network:        &api.Network{EnableDNSHostnames: ptr.To(true), PublishNotReadyAddresses: ptr.To(true)},
			FailurePolicy:  &api.FailurePolicy{RestartStrategy: api.Recreate, MaxRestarts: s.MaxRestarts},
			StartupPolicy:  &api.StartupPolicy{StartupPolicyOrder: api.InOrder},
			ReplicatedJobs: []api.ReplicatedJob{pathwaysHead(s, shape), pathwaysWorkers(s, shape)},
			Suspend:        ptr.To(false),
		},
	}
	if !s.Headless {
		js.Spec.SuccessPolicy = &api.SuccessPolicy{Operator: api.OperatorAll, TargetReplicatedJobs: []string{PathwaysHead}}
	}
	return js, nil
}

// pathwaysHead is the head: one pod on a host of the CPU pool, its
// proxy and resource manager as sidecars sharing /tmp with the user's
// program.
func pathwaysHead(s PathwaysSpec, shape tpu.Shape) api.ReplicatedJob {
	gcs := "--gcs_scratch_location=" + s.GCSLocation
	proxyArgs := []string{fmt.Sprintf("--server_port=%d", ProxyPort), fmt.Sprintf("--resource_manager_address=$(PATHWAYS_HEAD):%d", ResourceManagerPort), gcs}
	if s.ElasticSlices > 0 {
		proxyArgs = append(proxyArgs, fmt.Sprintf("--num_elastic_slices=%d", s.ElasticSlices))
	}
	proxy := sidecar(s.ProxyImage, "pathways-proxy", proxyArgs,
		[]corev1.EnvVar{labelEnv("PATHWAYS_HEAD", api.CoordinatorKey)}, ProxyPort)
	proxy.Resources = limits("16", "100G")
	rmArgs := []string{fmt.Sprintf("--server_port=%d", ResourceManagerPort), gcs, "--node_type=resource_manager",
		fmt.Sprintf("--instance_count=%d", s.Slices), "--instance_type=" + instanceType(shape)}
	rm := sidecar(s.ServerImage, "pathways-rm", rmArgs, []corev1.EnvVar{
		annotationEnv("REPLICATED_JOB_NAME", api.ReplicatedJobNameKey), annotationEnv("JOBSET_NAME", api.JobSetNameKey),
		labelEnv("HOST_ADDRESS", api.CoordinatorKey), {Name: "TPU_SKIP_MDS_QUERY", Value: "true"},
	}, ResourceManagerPort, ResourceManagerPort+1)
	rm.Resources = limits("8", "32G")
	pod := corev1.PodSpec{
		HostNetwork: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet, RestartPolicy: corev1.RestartPolicyNever,
		NodeSelector: map[string]string{gke.NodePoolLabel: PathwaysCPUPool},
		Volumes:      []corev1.Volume{sharedTmp()},
	}
	if s.Headless {
		// As xpk: the sidecars become the containers, keeping their
		// restartPolicy Always (container restart rules, Kubernetes 1.35+).
		pod.Containers = []corev1.Container{proxy, rm}
	} else {
		pod.InitContainers = []corev1.Container{proxy, rm}
		env := append([]corev1.EnvVar{
			labelEnv("PATHWAYS_HEAD", api.CoordinatorKey), {Name: "JAX_PLATFORMS", Value: "proxy"},
			{Name: "XCLOUD_ENVIRONMENT", Value: "GCP"}, {Name: "JAX_BACKEND_TARGET", Value: fmt.Sprintf("grpc://$(PATHWAYS_HEAD):%d", ProxyPort)},
		}, envList(s.Env)...)
		pod.Containers = []corev1.Container{{
			Name: "jax-tpu", Image: s.Image, Command: []string{"bash", "-c", s.Command}, Env: env,
			VolumeMounts: []corev1.VolumeMount{{Name: "shared-tmp", MountPath: "/tmp"}},
		}}
	}
	return api.ReplicatedJob{Name: PathwaysHead, Replicas: 1, Template: batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{api.ExclusiveKey: gke.HostnameLabel}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(0)), CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions: ptr.To(int32(1)), Parallelism: ptr.To(int32(1)),
			Template: corev1.PodTemplateSpec{Spec: pod},
		},
	}}
}

// pathwaysWorkers is one Job per slice: a Pathways worker on every host,
// retried in place (restartPolicy OnFailure) up to its backoffLimit.
func pathwaysWorkers(s PathwaysSpec, shape tpu.Shape) api.ReplicatedJob {
	hosts := int32(shape.Hosts)
	backoff := 4 * hosts
	if s.ElasticSlices > 0 {
		backoff = int32(s.MaxSliceRestarts) * hosts
	}
	image := s.WorkerImage
	if image == "" {
		image = s.ServerImage
	}
	args := []string{fmt.Sprintf("--server_port=%d", WorkerPort), fmt.Sprintf("--resource_manager_address=$(PATHWAYS_HEAD):%d", ResourceManagerPort),
		"--gcs_scratch_location=" + s.GCSLocation}
	worker := corev1.Container{
		Name: "pathways-worker", Image: image, Args: args,
		ImagePullPolicy: corev1.PullAlways,
		Env: []corev1.EnvVar{
			{Name: "TPU_MIN_LOG_LEVEL", Value: "0"}, {Name: "TF_CPP_MIN_LOG_LEVEL", Value: "0"}, {Name: "XCLOUD_ENVIRONMENT", Value: "GCP"},
			{Name: "MEGASCALE_GRPC_ENABLE_XOR_TRACER", Value: "false"},
			labelEnv("MEGASCALE_NUM_SLICES", api.ReplicatedJobReplicas), annotationEnv("JOBSET_NAME", api.JobSetNameKey),
			annotationEnv("REPLICATED_JOB_NAME", api.ReplicatedJobNameKey), labelEnv("MEGASCALE_SLICE_ID", api.JobIndexKey),
			labelEnv("PATHWAYS_HEAD", api.CoordinatorKey), labelEnv("MEGASCALE_COORDINATOR_ADDRESS", api.CoordinatorKey),
		},
		Ports: ports(WorkerPort, WorkerPort+1, 8471, 8080),
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			gke.TPUResource: *resource.NewQuantity(int64(shape.ChipsPerHost), resource.DecimalSI),
		}},
		VolumeMounts: []corev1.VolumeMount{{Name: "shared-tmp", MountPath: "/tmp"}},
	}
	if image == "" {
		worker.Image, worker.Command = StandInImage, standInCommand("worker")
	}
	pod := corev1.PodSpec{
		HostNetwork: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet, RestartPolicy: corev1.RestartPolicyOnFailure,
		TerminationGracePeriodSeconds: ptr.To(s.GracePeriod), PriorityClassName: s.Priority,
		NodeSelector: map[string]string{gke.AcceleratorLabel: shape.Accelerator, gke.TopologyLabel: shape.Topology.String()},
		Tolerations:  []corev1.Toleration{{Key: gke.TPUTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Containers:   []corev1.Container{worker},
		Volumes:      []corev1.Volume{sharedTmp()},
	}
	return api.ReplicatedJob{Name: PathwaysWorker, Replicas: int32(s.Slices), Template: batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{api.ExclusiveKey: gke.NodePoolLabel}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(backoff), CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions: ptr.To(hosts), Parallelism: ptr.To(hosts),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{XPKWorkloadLabel: s.Name}}, Spec: pod},
		},
	}}
}

// sidecar is one of the head's sidecars (restartPolicy Always): the given
// image with xpk's args, or the stand-in playing its role.
func sidecar(image, name string, args []string, env []corev1.EnvVar, containerPorts ...int32) corev1.Container {
	c := corev1.Container{
		Name: name, Image: image, Args: args, Env: env, ImagePullPolicy: corev1.PullAlways,
		Ports:         ports(containerPorts...),
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		VolumeMounts:  []corev1.VolumeMount{{Name: "shared-tmp", MountPath: "/tmp"}},
	}
	if image == "" {
		role := map[string]string{"pathways-proxy": "proxy", "pathways-rm": "resource-manager"}[name]
		c.Image, c.Command = StandInImage, standInCommand(role)
	}
	return c
}

// standInCommand runs the project's binary as the Pathways part role;
// xpk's args follow it unchanged.
func standInCommand(role string) []string {
	return []string{"/multislice", "pathways-standin", "--role=" + role}
}

// instanceType is what xpk tells the resource manager the slices are,
// e.g. tpuv4:2x2x2.
func instanceType(shape tpu.Shape) string {
	version := map[string]string{"v4": "tpuv4", "v5e": "tpuv5e", "v5p": "tpuv5", "v6e": "tpuv6e", "tpu7x": "tpu7x"}[shape.Generation.Name]
	if version == "" {
		version = "tpu" + shape.Generation.Name
	}
	return version + ":" + shape.Topology.String()
}

func ports(ps ...int32) []corev1.ContainerPort {
	out := make([]corev1.ContainerPort, len(ps))
	for i, p := range ps {
		out[i] = corev1.ContainerPort{ContainerPort: p, Protocol: corev1.ProtocolTCP}
	}
	return out
}

// limits are xpk's for the head's sidecars: the head needs a large CPU
// host (xpk's cpu-np is n2-standard-64).
func limits(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}
}

func sharedTmp() corev1.Volume {
	return corev1.Volume{Name: "shared-tmp", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/tmp", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}
}

func labelEnv(name, label string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + label + "']"}}}
}

func annotationEnv(name, annotation string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotation + "']"}}}
}
