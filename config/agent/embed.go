// Package agent embeds the in-place restart agent's permissions (rbac.yaml)
// so that the local cluster can grant them in its default namespace.
package agent

import _ "embed"

// RBAC is rbac.yaml: the agent's ServiceAccount, Role and RoleBinding.
//
//go:embed rbac.yaml
var RBAC []byte
