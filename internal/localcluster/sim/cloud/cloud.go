// Package cloud is the simulated TPU cloud behind the local cluster: it
// keeps node-pool records and capacity in the cluster (namespace
// multislice-system), runs one node-pool operation at a time as GKE does,
// enforces the multislice-group rules, and turns pools into simulated Nodes.
package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

const (
	// Namespace holds the simulated cloud's records.
	Namespace = "multislice-system"
	// PoolLabel marks a node-pool record and names its pool.
	PoolLabel   = "multislice.dev/nodepool"
	settingsMap = "multislice-cloud"
)

// Settings are the cloud-wide facts taken from the fleet config.
type Settings struct {
	GroupLabels fleet.GroupLabels `json:"groupLabels"`
	// Quota is the total hosts per accelerator the cloud may run.
	Quota map[string]int `json:"quota"`
}

// Cloud is a handle on the simulated cloud of one cluster.
type Cloud struct {
	client   kubernetes.Interface
	Settings Settings
	// Who names the caller in the operation lock, e.g. "multislice nodepool create".
	Who string
	// StopKubelet stops the kubelet of a real host (a process of the local
	// cluster, which `multislice up` starts again): a real host is lost
	// that way. Nil where there are no real hosts.
	StopKubelet func(node string) error
}

// Init records the settings of a new cluster's cloud.
func Init(ctx context.Context, client kubernetes.Interface, s Settings) (*Cloud, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", Namespace, err)
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: settingsMap, Namespace: Namespace},
		Data:       map[string]string{"settings.json": string(data)},
	}
	if _, err := client.CoreV1().ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("record cloud settings: %w", err)
	}
	return &Cloud{client: client, Settings: s}, nil
}

// Open connects to the simulated cloud of a running local cluster, as who
// (named in the operation lock, e.g. "multislice nodepool create").
func Open(ctx context.Context, client kubernetes.Interface, who string) (*Cloud, error) {
	cm, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, settingsMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("this cluster has no simulated TPU cloud (no %s/%s): node pools are managed by `multislice up` clusters only", Namespace, settingsMap)
	}
	if err != nil {
		return nil, fmt.Errorf("read cloud settings: %w", err)
	}
	var s Settings
	if err := json.Unmarshal([]byte(cm.Data["settings.json"]), &s); err != nil {
		return nil, fmt.Errorf("cloud settings %s/%s are damaged: %w", Namespace, settingsMap, err)
	}
	s.GroupLabels = (&fleet.Config{GroupLabels: s.GroupLabels}).Keys()
	return &Cloud{client: client, Settings: s, Who: who}, nil
}

// Pools returns every recorded node pool, by name.
func (c *Cloud) Pools(ctx context.Context) ([]fleet.Resolved, error) {
	list, err := c.client.CoreV1().ConfigMaps(Namespace).List(ctx, metav1.ListOptions{LabelSelector: PoolLabel})
	if err != nil {
		return nil, fmt.Errorf("list node pools: %w", err)
	}
	records := make([]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		records[i] = &list.Items[i]
	}
	return poolsFrom(records)
}

// poolsFrom reads node pools from their records, sorted by name.
func poolsFrom(records []*corev1.ConfigMap) ([]fleet.Resolved, error) {
	pools := make([]fleet.Resolved, 0, len(records))
	for _, cm := range records {
		var p fleet.Pool
		if err := json.Unmarshal([]byte(cm.Data["pool.json"]), &p); err != nil {
			return nil, fmt.Errorf("node pool record %s is damaged: %w", cm.Name, err)
		}
		r, err := fleet.Resolve(p)
		if err != nil {
			return nil, fmt.Errorf("node pool record %s: %w", cm.Name, err)
		}
		pools = append(pools, r)
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	return pools, nil
}

func recordName(pool string) string { return "nodepool-" + pool }

func (c *Cloud) writeRecord(ctx context.Context, p fleet.Pool, create bool) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: recordName(p.Name), Namespace: Namespace, Labels: map[string]string{PoolLabel: p.Name}},
		Data:       map[string]string{"pool.json": string(data)},
	}
	if create {
		_, err = c.client.CoreV1().ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{})
	} else {
		_, err = c.client.CoreV1().ConfigMaps(Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("record node pool %s: %w", p.Name, err)
	}
	return nil
}
