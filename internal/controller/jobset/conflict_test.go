package jobset

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOnlyConflicts(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "jobsets"}, "x", errors.New("modified"))
	other := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"one conflict", conflict, true},
		{"wrapped", fmt.Errorf("update status: %w", conflict), true},
		{"joined conflicts", errors.Join(fmt.Errorf("job a: %w", conflict), fmt.Errorf("update status: %w", conflict)), true},
		{"a conflict and another error", errors.Join(conflict, other), false},
		{"another error", other, false},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "jobs"}, "x"), false},
	} {
		if got := onlyConflicts(tc.err); got != tc.want {
			t.Errorf("%s: onlyConflicts = %v, want %v", tc.name, got, tc.want)
		}
	}
}
