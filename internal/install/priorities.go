package install

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/multislice/multislice/internal/workload"
)

// PriorityClasses creates the PriorityClasses that `multislice workload
// create --priority` names (xpk's very-low .. very-high), if missing.
func PriorityClasses(ctx context.Context, client kubernetes.Interface) error {
	for name, value := range workload.Priorities {
		pc := &schedulingv1.PriorityClass{
			ObjectMeta:  metav1.ObjectMeta{Name: name},
			Value:       value,
			Description: "multislice workload priority " + name,
		}
		_, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PriorityClass %s: %w", name, err)
		}
	}
	return nil
}
