# uiod — build and test entry points. `make test` is the one command that runs every test.
GO      ?= go
PKGS    := ./...
# staticcheck, pinned: release 2026.2.2 is module version v0.8.2, which runs with Go 1.26
# (release 2025.1.1 cannot be fetched from the module proxy).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages whose tests do not measure time: run under the race detector too.
RACE_PKGS := ./pci/... ./config/... ./irq/... ./idle/... ./wire/... ./nic/... ./sim/... ./vfio/... ./uio/... ./dmamem/... ./latency/... ./daemon/... ./capture/... ./l3fwd/... ./bridge/...

.PHONY: all build test unit race lint qemu-setup bench soak deb clean

all: build

# The version uiod version prints: git describe of this tree (VERSION=... overrides).
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git describe --always --dirty 2>/dev/null)

build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION) -X main.revision=$(REVISION)" -o bin/uiod ./cmd/uiod

# Everything: formatting and vet, unit and model tests, race detector on the non-timing
# packages, and the real-kernel tests in a QEMU guest (installed on demand when root).
# scripts/gotest.sh reruns (at most twice), and only, a QEMU guest test whose guest kernel stalled.
test: lint qemu-setup
	GO=$(GO) bash scripts/gotest.sh $(PKGS)
	$(GO) test -count=1 -short -race -timeout 20m $(RACE_PKGS)
	$(MAKE) soak SOAK_DURATION=60s

unit: lint
	$(GO) test -count=1 -short $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

# Installs QEMU 10, busybox, a Debian kernel for the guest tests, DPDK's testpmd for the
# vhost-user tests and BIRD 2 for the router's routing-daemon test (root only; idempotent).
# Without root it says why and the integration tests skip.
qemu-setup:
	@if [ "$$(id -u)" = 0 ]; then bash scripts/qemu-setup.sh && bash scripts/routing-setup.sh; \
	 else echo "qemu-setup: not root: QEMU integration tests will skip"; fi

# Model traffic with random faults through the dataplane for SOAK_DURATION (make test: 60 s),
# checking that every frame is accounted for, buffers come back, and nothing leaks.
# SOAK_SEED=N replays a run (the test logs its seed).
SOAK_DURATION ?= 10m
SOAK_TIMEOUT  ?= 30m
soak:
	SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -v -timeout $(SOAK_TIMEOUT) -run '^TestSoak$$' ./testrig/soak/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./nic/... ./dataplane/...

# The Debian package (bin/uiod_<version>_<arch>.deb) from a staged tree with dpkg-deb.
deb:
	GO=$(GO) REVISION=$(REVISION) bash packaging/deb.sh

clean:
	rm -rf bin
