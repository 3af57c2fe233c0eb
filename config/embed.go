// Package config embeds the kustomize tree config/default builds, so that
// the multislice binary can render install.yaml without the source tree
// (`multislice up --manager=in-cluster`).
package config

import "embed"

// Kustomize holds default/ and everything it includes.
//
//go:embed default/kustomization.yaml crd/kustomization.yaml crd/bases rbac/kustomization.yaml rbac/rbac.yaml manager/*.yaml webhook/*.yaml
var Kustomize embed.FS
