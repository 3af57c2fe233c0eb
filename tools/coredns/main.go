// Command coredns is CoreDNS from its pinned module with only the plugins
// the local cluster's DNS uses: cluster names from the API (kubernetes),
// everything else forwarded to the machine's resolver. Fewer plugins than
// upstream's build keep the first build short.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The plugins in upstream's order (core/dnsserver/zdirectives.go): the
// order a request passes them in.
var directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes", "loop", "forward"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
