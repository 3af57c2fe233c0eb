// Command restart measures restart-all at scale on a local cluster: one
// JobSet of 64 slices x 16 hosts (1,024 pods, v4 4x4x4); one pod fails;
// how long until all 1,024 pods of the next attempt are Running. Reported
// with pods that stop at once, and split into detection (restart begun)
// and the rest.
//
//	go run ./bench/restart -slices 64
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/bench/benchcluster"
)

func main() {
	slices := flag.Int("slices", 64, "slices of 16 hosts")
	bin := flag.String("bin", "bin", "directory with multislice and the control-plane binaries")
	flag.Parse()
	if err := run(*bin, *slices); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(bin string, slices int) error {
	c, err := benchcluster.Up(bin, fmt.Sprintf("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\ngroups:\n"+
		"- {name: big, accelerator: tpu-v4-podslice, topology: 4x4x4, slices: %d}\n", slices), nil)
	if err != nil {
		return err
	}
	defer c.Down()
	cs, cl := c.Client, c.Objects
	ctx := context.Background()
	js := &api.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default",
			Annotations: map[string]string{api.ExclusiveKey: "cloud.google.com/gke-nodepool"}},
		Spec: api.JobSetSpec{
			FailurePolicy: &api.FailurePolicy{MaxRestarts: 5},
			ReplicatedJobs: []api.ReplicatedJob{{Name: "slice", Replicas: int32(slices), Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				CompletionMode: ptr.To(batchv1.IndexedCompletion), Parallelism: ptr.To(int32(16)), Completions: ptr.To(int32(16)),
				BackoffLimit: ptr.To(int32(0)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  map[string]string{"cloud.google.com/gke-tpu-accelerator": "tpu-v4-podslice", "cloud.google.com/gke-tpu-topology": "4x4x4"},
					Containers: []corev1.Container{{Name: "main", Image: "python:3.12",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"google.com/tpu": resource.MustParse("4")}}}},
				}},
			}}}},
		},
	}
	began := time.Now()
	if err := cl.Create(ctx, js); err != nil {
		return err
	}
	if _, err := waitRunning(ctx, cs, "0", slices*16); err != nil {
		return err
	}
	fmt.Printf("first start: all %d pods Running after %.1fs\n", slices*16, time.Since(began).Seconds())
	time.Sleep(3 * time.Second)
	if out, err := c.Run("chaos", "fail-pod", "--nodepool", "big-np-7"); err != nil {
		return fmt.Errorf("chaos: %v\n%s", err, out)
	}
	began = time.Now()
	var detected time.Duration
	for detected == 0 {
		var got api.JobSet
		if err := cl.Get(ctx, client.ObjectKeyFromObject(js), &got); err == nil && got.Status.Restarts == 1 {
			detected = time.Since(began)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := waitRunning(ctx, cs, "1", slices*16); err != nil {
		return err
	}
	fmt.Printf("restart-all after one pod failure: restart began after %.2fs; all %d pods Running at attempt 1 after %.1fs\n",
		detected.Seconds(), slices*16, time.Since(began).Seconds())
	return nil
}

func waitRunning(ctx context.Context, cs kubernetes.Interface, attempt string, want int) (time.Duration, error) {
	began := time.Now()
	for time.Since(began) < 10*time.Minute {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{
			LabelSelector: api.RestartsKey + "=" + attempt, ResourceVersion: "0"})
		if err == nil {
			n := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					n++
				}
			}
			if n >= want {
				return time.Since(began), nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("not all %d pods of attempt %s Running", want, attempt)
}
