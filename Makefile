# Multislice. `make demo` and `make test` are the two commands a user needs.

BIN      := $(CURDIR)/bin
MULTISLICE := $(BIN)/multislice
# Go files and the files they embed (stages, RBAC, versions, CRDs).
GO_SOURCES := $(shell find . -name '*.go' -not -path './tools/*' -not -path './bin/*') $(shell find internal config api -type f -not -name '*.go') go.mod go.sum
# Everything is compiled with CGO off, as the static multislice binary is, so that vet, the tests
# and the control plane (hack/build-controlplane.sh) reuse one compilation of the packages they share.
export CGO_ENABLED := 0
# go test's flags for test-unit and test-e2e (-count=1: a result is never taken from the cache).
GOTEST_FLAGS ?= -count=1

CONTROLLER_TOOLS_VERSION := $(shell sed -n 's/^CONTROLLER_TOOLS_VERSION=//p' internal/versions/versions.env)
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)/controller-gen

# The image a real cluster pulls; push it to your own registry and set IMAGE.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
CREATED  := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE    ?= ghcr.io/multislice/multislice:$(VERSION)

.PHONY: all build manager binaries controlplane packages demo demo-real test test-unit test-e2e fmt vet clean generate verify-generated image release

all: build

## build: the multislice binary (bin/multislice)
build: $(MULTISLICE)

$(MULTISLICE): $(GO_SOURCES)
	@./hack/build-multislice.sh $@

## manager: bin/multislice-manager, the manager-only binary, built as the image builds it (static,
## trimmed, stripped: hack/image), for MULTISLICE_MANAGER_BINARY=bin/multislice-manager
manager: $(BIN)/multislice-manager

$(BIN)/multislice-manager: $(GO_SOURCES)
	go build -trimpath -buildvcs=false -ldflags '-s -w' -o $@ ./cmd/multislice-manager

## binaries: the pinned control plane (etcd, kube-*, kwok) and real hosts' parts (kubelet,
## kube-proxy, containerd, CNI plugins, CoreDNS), cached in bin/ by version
binaries:
	@./hack/build-controlplane.sh all

## controlplane: only what a simulated fleet needs (etcd, kube-apiserver, kube-scheduler,
## kube-controller-manager, kwok): `make demo` builds no part it does not start
controlplane:
	@./hack/build-controlplane.sh control-plane

## generate: deepcopy functions and the CRD from api/ (controller-gen, pinned)
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./api/... crd:crdVersions=v1,generateEmbeddedObjectMeta=true output:crd:dir=./config/crd/bases

$(CONTROLLER_GEN):
	GOBIN=$(dir $@) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

# The generated files are committed; CI checks they match the API.
verify-generated: generate
	@git diff --exit-code -- api config/crd || { echo 'generated files are stale: run make generate and commit'; exit 1; }

## image: the manager image without a container engine: dist/oci (OCI layout, linux/amd64 and
## linux/arm64) and dist/multislice-linux-<arch>.tar for `docker load`; reproducible per commit
image:
	go run ./hack/image -image $(IMAGE) -version $(VERSION) -revision $(REVISION) -created $(CREATED) -out dist

## release: dist/install.yaml, everything a cluster needs, pointing at $(IMAGE)
release:
	@mkdir -p dist
	go run ./hack/release -image $(IMAGE) -out dist/install.yaml

## demo: start the local cluster and run a TPU Indexed Job on the simulated fleet
demo: controlplane build
	@./hack/demo.sh

## demo-real: real hosts (examples/fleet-real.yaml), the trainer on two real slices, a worker
## killed and every worker resumed from the newest checkpoint (as root)
demo-real: binaries build packages
	@./hack/demo-real.sh

## packages: the Debian packages tests and real hosts need (Chromium, runc, busybox-static,
## iproute2, iptables), each with a checked minimum version; as root, through apt
packages:
	@./hack/install-packages.sh

## test: every test (unit, then end-to-end on a real local cluster)
test: binaries build packages vet verify-generated test-unit test-e2e

test-unit:
	go test $(GOTEST_FLAGS) $$(go list ./... | grep -v /test/)

# Two go test processes side by side. One runs TestRealHosts, alone in its process: it reads the
# machine's sysctls and iptables rules before and after its real hosts, which no simulated cluster
# touches. The other runs every other test, E2E_PARALLEL at a time, each on its own cluster, with
# the envtest integration package beside them. They mostly wait on their clusters' clocks: two
# tests at a time kept the two cores about half busy, and the real hosts about a third.
# Bounded: each test starts a cluster of its own, and three already keep two cores full.
E2E_PARALLEL ?= 3
E2E := MULTISLICE_E2E=1 MULTISLICE_BIN_DIR=$(BIN) go test $(GOTEST_FLAGS) -timeout 60m
test-e2e:
	@case "$(E2E_PARALLEL)" in [1-8]) ;; *) echo "E2E_PARALLEL=$(E2E_PARALLEL): set 1 to 8 tests at a time (each starts a cluster of its own)"; exit 2 ;; esac
	@$(E2E) -run '^TestRealHosts$$' ./test/e2e & real=$$!; \
	$(E2E) -p 2 -parallel $(E2E_PARALLEL) -skip '^TestRealHosts$$' ./test/...; rest=$$?; \
	wait $$real; real=$$?; \
	[ $$real = 0 ] || echo 'FAIL: TestRealHosts (above)'; [ $$rest = 0 ] && [ $$real = 0 ]

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'run gofmt -w on the files above'; exit 1; }
	go vet ./...

clean:
	-$(MULTISLICE) down 2>/dev/null
	rm -rf $(BIN)
