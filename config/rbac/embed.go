// Package rbac embeds the manager's permissions (rbac.yaml) so that the
// multislice binary can grant them on the local cluster without the source tree.
package rbac

import _ "embed"

// Manager is rbac.yaml: the manager's ServiceAccount, roles and bindings.
//
//go:embed rbac.yaml
var Manager []byte
