// Command kube-proxy is the upstream kube-proxy, built from the pinned k8s.io/kubernetes module.
// It gives the local cluster's real hosts Service ClusterIPs.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
