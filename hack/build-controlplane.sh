#!/usr/bin/env bash
# Builds the pinned control-plane binaries into bin/, keyed by version:
#   bin/kubernetes-<v>/{kube-apiserver,kube-scheduler,kube-controller-manager}
#   bin/etcd-<v>/etcd   bin/kwok-<v>/kwok
#   real hosts: bin/kubelet-<k8s>/{kubelet,kube-proxy}  bin/containerd-<v>/{containerd,containerd-shim-runc-v2}
#   bin/cni-plugins-<v>/{bridge,host-local,loopback}  bin/coredns-<v>/coredns
#   bin/kueue-<v>/{kueue,config/} (up --kueue)
#   bin/envtest-<k8s>-<etcd>/  (links for controller-runtime's KUBEBUILDER_ASSETS)
# A directory that exists is complete (each is built in a temporary directory and
# renamed), so a cached version is never rebuilt and an interrupted build never counts.
# Usage: build-controlplane.sh [control-plane|real-hosts|kueue|all] (default all).
# control-plane is what a simulated fleet needs (`make demo`): etcd, kwok, kube-*
# and envtest's links; real-hosts adds kubelet, kube-proxy, containerd, the CNI
# plugins and CoreDNS (`up` with real hosts builds them when they are missing);
# kueue adds Kueue (`up --kueue` likewise); all is everything (`make test`,
# `make demo-real`).
set -euo pipefail
parts=${1:-all}
case $parts in
  control-plane|real-hosts|kueue|all) ;;
  *) echo "usage: $0 [control-plane|real-hosts|kueue|all]: $parts is none of them" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../internal/versions/versions.env
source "$root/internal/versions/versions.env"
bin="$root/bin"
mkdir -p "$bin"
# Static binaries, every one compiled as the multislice binary and the
# tests are (CGO off, no -trimpath): on a fresh machine the standard library
# is compiled once, not once per set of flags, and so is each package two of
# them use at the same version (the Kubernetes packages: tools/controlplane/
# go.mod agrees with go.mod; a unit test checks it).
export CGO_ENABLED=0

step() { printf '==> %s\n' "$*"; }

build_into() { # build_into <final dir> <label> <command...>
  local final=$1 label=$2; shift 2
  if [[ -d $final ]]; then return 0; fi
  local tmp="$final.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  local start=$SECONDS
  step "building $label (first time only; cached in ${final#"$root"/})"
  ( "$@" "$tmp" ) || { rm -rf "$tmp"; echo "build of $label failed" >&2; exit 1; }
  mv "$tmp" "$final"
  step "built $label in $((SECONDS - start))s"
}

kube_build() { # kube_build <out> <command dir...>: from the pinned k8s.io/kubernetes
  local out=$1 minor=${KUBERNETES_VERSION#v1.}; shift
  minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  cd "$root/tools/controlplane"
  go build -o "$out/" -ldflags "-s -w \
    -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor \
    -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z" "$@"
}
control_plane_build() { kube_build "$1" ./kube-apiserver ./kube-scheduler ./kube-controller-manager; }
node_build() { kube_build "$1" ./kubelet ./kube-proxy; }

# containerd and the CNI plugins are static (no cgo: no btrfs or zfs
# snapshotters, which real hosts do not use), from their own modules' go.mod.
containerd_build() {
  local m=github.com/containerd/containerd/v2
  CGO_ENABLED=0 GOBIN="$1" go install -ldflags "-s -w -X $m/version.Version=$CONTAINERD_VERSION" \
    "$m/cmd/containerd@$CONTAINERD_VERSION" "$m/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
}

cni_build() {
  local m=github.com/containernetworking/plugins/plugins
  CGO_ENABLED=0 GOBIN="$1" go install -ldflags "-s -w" \
    "$m/main/bridge@$CNI_PLUGINS_VERSION" "$m/main/loopback@$CNI_PLUGINS_VERSION" "$m/ipam/host-local@$CNI_PLUGINS_VERSION"
}

coredns_build() {
  cd "$root/tools/coredns"
  go build -ldflags "-s -w" -o "$1/coredns" .
}

# etcd v3.6 from tools/etcd, whose go.mod selects the control plane's versions
# of the libraries both use (grpc, protobuf, OpenTelemetry, Prometheus, zap:
# a unit test checks), built with the control plane's flags: those packages
# compile once on a fresh machine, for etcd, and kube-apiserver reuses them.
etcd_build() {
  cd "$root/tools/etcd"
  go build -ldflags "-s -w" -o "$1/etcd" .
}

# Kueue from its own module's go.mod, with the manifests `up --kueue` applies
# (CRDs, webhooks, RBAC) copied from the same module version.
kueue_build() {
  local m=sigs.k8s.io/kueue src
  GOBIN="$1" go install -ldflags "-s -w -X $m/pkg/version.GitVersion=$KUEUE_VERSION" "$m/cmd/kueue@$KUEUE_VERSION"
  src=$(go mod download -json "$m@$KUEUE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $src/config/components ]] || { echo "no config/components in $m@$KUEUE_VERSION ($src)" >&2; return 1; }
  mkdir -p "$1/config"
  cp "$src"/config/components/crd/bases/*.yaml "$src/config/components/webhook/manifests.yaml" "$1/config/"
  cp "$src/config/components/crd/kustomization.yaml" "$1/config/crd-kustomization.yaml" # which CRDs convert
  local r
  for r in role role_binding manager_secrets_role manager_secrets_role_binding; do
    cp "$src/config/components/rbac/$r.yaml" "$1/config/rbac-$r.yaml"
  done
  chmod -R u+w "$1/config"
}

# kwok is a tool of tools/controlplane (its go.mod pins the version), built
# as the control plane is: it reuses the Kubernetes packages they compiled,
# at their versions, where its own module would compile older ones again.
kwok_build() {
  cd "$root/tools/controlplane"
  go build -o "$1/" -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok
}

envtest_links() {
  ln -s "../etcd-$ETCD_VERSION/etcd" "$1/etcd"
  ln -s "../kubernetes-$KUBERNETES_VERSION/kube-apiserver" "$1/kube-apiserver"
}

build_into "$bin/etcd-$ETCD_VERSION" "etcd $ETCD_VERSION (~1.5 min on a fresh machine)" etcd_build
build_into "$bin/kubernetes-$KUBERNETES_VERSION" \
  "kube-apiserver, kube-scheduler, kube-controller-manager $KUBERNETES_VERSION (~11 min)" control_plane_build
build_into "$bin/kwok-$KWOK_VERSION" "kwok $KWOK_VERSION (~1 min)" kwok_build
build_into "$bin/envtest-$KUBERNETES_VERSION-$ETCD_VERSION" "envtest assets" envtest_links
if [[ $parts == real-hosts || $parts == all ]]; then
  build_into "$bin/kubelet-$KUBERNETES_VERSION" "kubelet, kube-proxy $KUBERNETES_VERSION (~2 min)" node_build
  build_into "$bin/containerd-$CONTAINERD_VERSION" "containerd $CONTAINERD_VERSION (~2 min)" containerd_build
  build_into "$bin/cni-plugins-$CNI_PLUGINS_VERSION" "CNI plugins $CNI_PLUGINS_VERSION (~1 min)" cni_build
  build_into "$bin/coredns-$COREDNS_VERSION" "CoreDNS $COREDNS_VERSION (~3 min)" coredns_build
fi
if [[ $parts == kueue || $parts == all ]]; then
  build_into "$bin/kueue-$KUEUE_VERSION" "Kueue $KUEUE_VERSION (~5 min)" kueue_build
fi
