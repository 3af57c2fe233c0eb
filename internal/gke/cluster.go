package gke

import "strings"

// IsGKE reports whether an API server's version (its /version gitVersion,
// e.g. "v1.33.5-gke.1162000") is GKE's: GKE stamps every control-plane
// release with a "-gke." suffix.
func IsGKE(gitVersion string) bool {
	return strings.Contains(gitVersion, "-gke.")
}
