# Multislice. `make demo` and `make test` are the two commands a user needs.

BIN      := $(CURDIR)/bin
MULTISLICE := $(BIN)/multislice
GO_SOURCES := $(shell find . -name '*.go' -not -path './tools/*' -not -path './bin/*') go.mod go.sum
# Where a test cluster's processes may run; CI has two cores, so e2e packages run one at a time.
GOTEST_FLAGS ?= -count=1

.PHONY: all build binaries demo test test-unit test-e2e fmt vet clean

all: build

## build: the multislice binary (bin/multislice)
build: $(MULTISLICE)

$(MULTISLICE): $(GO_SOURCES)
	go build -o $@ ./cmd/multislice

## binaries: the pinned control plane (etcd, kube-*, kwok), cached in bin/ by version
binaries:
	@./hack/build-controlplane.sh

## demo: start the local cluster and run a TPU Indexed Job on the simulated fleet
demo: binaries build
	@./hack/demo.sh

## test: every test (unit, then end-to-end on a real local cluster)
test: binaries build vet test-unit test-e2e

test-unit:
	go test $(GOTEST_FLAGS) $$(go list ./... | grep -v /test/)

test-e2e:
	MULTISLICE_E2E=1 MULTISLICE_BIN_DIR=$(BIN) go test $(GOTEST_FLAGS) -p 1 -timeout 30m ./test/...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'run gofmt -w on the files above'; exit 1; }
	go vet ./...

clean:
	-$(MULTISLICE) down 2>/dev/null
	rm -rf $(BIN)
