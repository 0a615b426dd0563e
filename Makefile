# berth — make targets. `make help` lists them.
GO       ?= go
PREFIX   ?= /usr/local
BIN      := bin
# A semantic version, which kubelet parses (it shows "berth://Unknown" otherwise):
# no release yet, so 0.0.0-dev with the commit as build metadata.
VERSION  ?= 0.0.0-dev+$(shell git describe --always --dirty 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X main.version=$(VERSION)
ROOT_DIR ?= /var/lib/berth
CRITEST_DEPS := $(BIN)/critest-deps
CONFORMANCE_DEPS := $(BIN)/conformance-deps
# golangci-lint, pinned in tools/lint/go.mod (a module of its own: its golang.org/x/tools
# is newer than the CRI tools' in tools/go.mod) and configured by .golangci.yml.
GOLANGCI_LINT := $(BIN)/golangci-lint
GOLANGCI_LINT_VERSION = $(shell awk '$$1 == "require" && $$2 == "github.com/golangci/golangci-lint/v2" {print $$3}' tools/lint/go.mod)
# Upstream Kubernetes and etcd, built from the module proxy through the wrapper
# modules in tools/kube<version> and tools/etcd (docs/kubernetes.md).
KUBE_VERSION ?= 1.37
KUBE_BIN     := $(BIN)/kube-$(KUBE_VERSION)
KUBE_CMDS    := kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler
KUBE_FULL     = $(shell awk '$$1 == "require" && $$2 == "k8s.io/kubernetes" {print $$3}' tools/kube$(KUBE_VERSION)/go.mod)
KUBE_VERSION_PKG := k8s.io/component-base/version
KUBE_LDFLAGS  = -s -w -X $(KUBE_VERSION_PKG).gitVersion=$(KUBE_FULL) -X $(KUBE_VERSION_PKG).gitTreeState=clean \
	-X $(KUBE_VERSION_PKG).gitMajor=$(word 1,$(subst ., ,$(KUBE_VERSION))) -X $(KUBE_VERSION_PKG).gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))
# What berth needs to run; what its tests and benchmarks need on top (a registry to pull from,
# skopeo for the pull floor, hyperfine, qemu and mmdebstrap for make test-vm).
RUNTIME_PACKAGES := runc containernetworking-plugins busybox-static iptables nftables iproute2 util-linux
# What building the pinned runc needs (cgo with libseccomp, linked statically).
BUILD_PACKAGES   := gcc libc6-dev libseccomp-dev pkg-config
TEST_PACKAGES    := docker-registry skopeo tar gzip hyperfine containerd qemu-system-x86 mmdebstrap

.PHONY: help build runc-bin monitor-bin install install-unit deps runtime-deps image test test-unit test-integration test-e2e test-vm fuzz bench vet lint-bin crictl critest critest-bin kube-bin kubelet-bin etcd-bin containerd2-bin e2e-bin conformance-deps test-kubelet test-cluster control-plane-bin test-conformance-slow clean

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

build: runc-bin monitor-bin ## build berth, berth-monitor, berth-pause and the pinned runc (berth-runc) into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/berth ./cmd/berth-pause

# The per-pod monitor is C (native/berth-monitor, docs/architecture.md says why), linked
# statically against glibc: no runtime dependency. MONITOR_OUT lets the tests build it elsewhere.
# MONITOR_SANITIZE=1 builds it with AddressSanitizer and UBSan instead (dynamic, for test/monitor).
MONITOR_SRC     = $(wildcard native/berth-monitor/*.c) native/berth-monitor/monitor.h
MONITOR_OUT    ?= $(BIN)/berth-monitor
MONITOR_WARN   := -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-format-truncation -Werror
MONITOR_CFLAGS  = $(MONITOR_WARN) $(if $(MONITOR_SANITIZE),-O1 -g -fno-omit-frame-pointer \
	-fsanitize=address$(comma)undefined -fno-sanitize-recover=all,-O2 -s -D_FORTIFY_SOURCE=2 -fstack-protector-strong -static)
comma := ,
monitor-bin: ## build the per-pod monitor (native/berth-monitor, C) into bin/berth-monitor
	@mkdir -p $(dir $(MONITOR_OUT))
	$(CC) $(MONITOR_CFLAGS) -o $(MONITOR_OUT) $(filter %.c,$(MONITOR_SRC))

# The runc berth runs by default: the release pinned in tools/runc/go.mod,
# built as runc's own Makefile builds its static binary (cgo, libseccomp,
# static PIE; without libpathrs, a Rust library Debian 12 lacks: runc then
# uses its pure-Go path resolution). Installed beside berth as berth-runc.
RUNC_BIN     := $(BIN)/berth-runc
RUNC_VERSION  = $(shell awk '$$1 == "require" && $$2 == "github.com/opencontainers/runc" {print $$3}' tools/runc/go.mod)
# The tests run berth with it (test/harness copies it beside the berth they build).
export BERTH_TEST_RUNC := $(abspath $(RUNC_BIN))
runc-bin: ## build the pinned runc (tools/runc) into bin/berth-runc (needs gcc and libseccomp-dev: make runtime-deps)
	cd tools/runc && GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=1 $(GO) build -trimpath -buildmode=pie \
		-tags 'seccomp urfave_cli_no_docs netgo osusergo' \
		-ldflags '-s -w -X main.gitCommit=$(RUNC_VERSION) -linkmode external -extldflags -static-pie' \
		-o $(abspath $(RUNC_BIN)) github.com/opencontainers/runc

runtime-deps: ## install the Debian packages berth needs to run (root)
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(RUNTIME_PACKAGES) $(BUILD_PACKAGES)

deps: runtime-deps ## install the Debian packages berth and its tests need (root)
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TEST_PACKAGES)

install: runtime-deps build ## install the binaries into $(PREFIX)/bin and the systemd unit (install-unit), import a busybox image (root)
	install -m 0755 $(BIN)/berth $(BIN)/berth-monitor $(BIN)/berth-pause $(BIN)/berth-runc $(PREFIX)/bin/
	$(MAKE) install-unit
	$(MAKE) image

# systemd's place for units of locally installed software (systemd.unit(5));
# /etc/systemd/system stays the administrator's, for overrides.
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
install-unit: ## install contrib/systemd/berth.service into $(SYSTEMD_UNIT_DIR); where systemd is PID 1, enable it (not start it) (root)
	install -d $(SYSTEMD_UNIT_DIR) $(BIN)
	sed 's|/usr/local/bin/berth|$(PREFIX)/bin/berth|' contrib/systemd/berth.service > $(BIN)/berth.service
	install -m 0644 $(BIN)/berth.service $(SYSTEMD_UNIT_DIR)/berth.service
	@if [ -d /run/systemd/system ]; then \
		systemctl daemon-reload && systemctl enable berth.service && \
		echo "berth.service installed and enabled (not started): systemctl start berth"; \
	else \
		echo "berth.service installed into $(SYSTEMD_UNIT_DIR); systemd is not PID 1 here, so it is not enabled: run berth serve yourself (berth run starts one when none answers)"; \
	fi

image: ## build a busybox image from busybox-static and import it as docker.io/library/busybox:latest
	$(GO) run ./test/testimage/cmd/mkimage -o $(BIN)/busybox-oci.tar
	$(PREFIX)/bin/berth image import --root $(ROOT_DIR) $(BIN)/busybox-oci.tar

test: vet runc-bin ## unit (with the fuzz targets' seed corpora), integration and e2e tests (the agent on berth and on containerd), all with the race detector, then the monitor's suite on its ASan/UBSan build (the root suites skip when not root)
	BERTH_TEST_RACE=1 $(GO) test -race -count=1 -timeout 55m ./...
	BERTH_TEST_MONITOR_SANITIZE=1 $(GO) test -count=1 ./test/monitor/

test-unit: ## unit tests only
	$(GO) test -count=1 $$($(GO) list ./... | grep -v -e /test/integration -e /test/e2e)

test-integration: runc-bin ## root integration tests against a live berth serve
	$(GO) test -count=1 -v ./test/integration/

test-e2e: runc-bin ## root end-to-end tests: Pod YAML through the agent, each scenario on berth serve and on containerd (skipped without containerd)
	$(GO) test -count=1 -timeout 40m -v ./test/e2e/

# A Debian 12 VM (systemd PID 1, cgroup v2 only) under qemu/TCG: its image is
# built once into bin/vm/ (test/vm/image.sh, rebuilt when the recipe
# changes), then test/vm/inside.sh runs berth's unit and cgroup checks in it.
# docs/vm.md. VM_TIMEOUT (1200s) and VM_BOOT_TIMEOUT (300s) bound it. The
# focused critest run inside is the compiled test/critest package with its
# programs built here (the VM has no Go): VM_CRITEST_FOCUS picks its specs.
VM_CRITEST := $(BIN)/vm-critest
VM_CRITEST_FOCUS ?= Container OOM|listing container stats \[|listing stats for started containers \[|Privileged is true|MaskedPaths|ReadonlyPaths|seccomp default on the container|support HostPID|support PodPID|recursive readonly mounts|UserNamespaces|Image Volume|support returning metrics descriptors|support listing pod sandbox metrics
test-vm: build crictl kubelet-bin critest-bin $(CRITEST_DEPS)/busybox ## boot a Debian 12 VM (systemd PID 1, cgroup v2 only; qemu, no KVM) and run berth's unit, cgroup, kubelet (KUBE_VERSION) and focused critest checks in it (root; docs/vm.md)
	$(GO) run ./test/testimage/cmd/mkimage -o $(BIN)/busybox-oci.tar
	rm -rf $(VM_CRITEST) && mkdir -p $(VM_CRITEST)
	CGO_ENABLED=0 $(GO) test -c -o $(VM_CRITEST)/critest.test ./test/critest
	CGO_ENABLED=0 $(GO) build -o $(VM_CRITEST)/ ./test/critest/cmd/fakenginx ./test/critest/cmd/nonewprivs
	cp $(BIN)/berth $(BIN)/berth-monitor $(BIN)/berth-pause $(BIN)/berth-runc $(BIN)/critest $(CRITEST_DEPS)/busybox test/critest/skip.txt $(VM_CRITEST)/
	printf '%s\n' '$(VM_CRITEST_FOCUS)' >$(VM_CRITEST)/focus
	KUBELET=$(abspath $(KUBE_BIN))/kubelet ./test/vm/run.sh

# Native Go fuzz targets, package:FuzzName:executions. `make test` runs
# their seed corpora (f.Add and testdata/fuzz); `make fuzz` fuzzes each,
# one `go test` per target as go requires. A crasher is written to the
# package's testdata/fuzz/<FuzzName>/: commit it with the fix.
# Each target runs for a count of executions, about 30 s of it on a 2-core
# machine, not for a duration: go 1.26's fuzz coordinator can report its
# own -fuzztime deadline as a failure ("context deadline exceeded", no
# crasher; go.dev/issue/75804, fixed in go 1.27), and a count has no
# deadline. FUZZTIME=<duration or Nx> overrides every target's budget.
# New inputs are minimized for at most 1000 runs, not go's default 60s:
# that leaves a short run little time to fuzz, and a time limit kills and
# restarts the worker each time it expires (30s of FuzzDecode: 386 new
# inputs with 1000x, 62 in 45s with 5s).
FUZZTIME ?=
FUZZMINIMIZETIME ?= 1000x
FUZZ_TARGETS := ./internal/image:FuzzExtract:150000 ./internal/agent/manifest:FuzzDecode:50000 \
	./internal/registry:FuzzParseHosts:200000 ./internal/pod:FuzzValidateCRIConfig:150000
fuzz: ## fuzz the tar extractor, manifest decoder, hosts.toml parser and CRI config validation, ~30 s each (FUZZTIME overrides)
	@set -e; for target in $(FUZZ_TARGETS); do \
		pkg=$${target%%:*}; rest=$${target#*:}; name=$${rest%%:*}; budget=$(FUZZTIME); \
		budget=$${budget:-$${rest##*:}x}; \
		echo "fuzz $$name in $$pkg for $$budget"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$$budget -fuzzminimizetime=$(FUZZMINIMIZETIME) $$pkg; \
	done

vet: lint-bin ## go vet, gofmt and golangci-lint (.golangci.yml: the package layering of docs/architecture.md, errcheck, errorlint, staticcheck, gosec, ...)
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GOLANGCI_LINT) run ./...
	./scripts/lint-rules.sh $(GOLANGCI_LINT) .golangci.yml

# Rebuilt only when bin/ holds another version, or one built by another Go
# (golangci-lint refuses code newer than the Go it was built with).
lint-bin: ## build golangci-lint v2 (pinned in tools/lint/go.mod) into bin/, unless that version is there
	@if ! $(GOLANGCI_LINT) version 2>/dev/null | grep -qF "has version $(GOLANGCI_LINT_VERSION:v%=%) built with $$($(GO) env GOVERSION) "; then \
		echo "building golangci-lint $(GOLANGCI_LINT_VERSION) into $(GOLANGCI_LINT)"; \
		cd tools/lint && GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -trimpath \
			-o $(abspath $(GOLANGCI_LINT)) github.com/golangci/golangci-lint/v2/cmd/golangci-lint; \
	fi

# containerd 2.4 for the bench's concurrency section: containerd, its runc v2 shim and ctr from the
# containerd module at the release pinned in tools/containerd2/go.mod, into bin/containerd2/.
CONTAINERD2_DIR := $(BIN)/containerd2
containerd2-bin: ## build containerd 2.4 (containerd, containerd-shim-runc-v2, ctr; pinned in tools/containerd2) into bin/containerd2/
	cd tools/containerd2 && GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -trimpath \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$$(awk '$$1 == "require" && $$2 == "github.com/containerd/containerd/v2" {print $$3}' go.mod)" \
		-o $(abspath $(CONTAINERD2_DIR))/ github.com/containerd/containerd/v2/cmd/containerd \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr

BENCH_FLAGS ?=
# containerd 2.4 is built first; when it does not build, the bench reports it missing and goes on with 1.6.
bench: build critest-bin $(CRITEST_DEPS)/busybox ## benchmarks: pod/container latencies vs runc and CNI floors, berth with the pinned and the system runc and containerd 1.6 side by side, berth vs containerd 1.6 and 2.4 (built by containerd2-bin) with 1, 10 and 50 pods in flight from one client (wall, p50/p90/p99, CPU, forks, PSS per pod), image pull vs skopeo+tar, memory, then critest -benchmark and the agent (root; BENCH_FLAGS=-pull=false skips the pull, -runtimes=false the side by side, -only=concurrency runs only the concurrency section, -conc=1,10 -conc-pods=60 change it)
	$(MAKE) containerd2-bin || echo "bench: make containerd2-bin failed; the report says containerd 2.4 is missing"
	./scripts/bench.sh $(BENCH_FLAGS)
	BERTH_CRITEST=$(abspath $(BIN)/critest) BERTH_CRITEST_BUSYBOX=$(abspath $(CRITEST_DEPS)/busybox) \
	BERTH_CRITEST_BENCHMARK=$(abspath bench/critest.md) $(GO) test -count=1 -run TestCritestBenchmark -timeout 30m ./test/critest/
	{ printf '\n## critest -benchmark (cri-tools v1.37, serial: 50 pods, 50 containers, 20 image pulls from the local registry)\n\n'; \
	  cat bench/critest.md; } >> bench/report.md
	BERTH_AGENT_BENCH=$(abspath bench/agent.md) $(GO) test -count=1 -run TestAgentBenchmark -timeout 30m ./test/agentbench/
	{ printf '\n## The node agent: berth run to Running (warm image; podman kube play when installed)\n\n'; \
	  cat bench/agent.md; } >> bench/report.md

crictl: ## build crictl v1.37 (sigs.k8s.io/cri-tools, pinned in tools/go.mod) into bin/
	cd tools && GOSUMDB=off GOFLAGS=-mod=mod $(GO) build -o ../$(BIN)/crictl sigs.k8s.io/cri-tools/cmd/crictl

critest-bin: ## build critest v1.37 (the CRI validation suite, `go test -c` of sigs.k8s.io/cri-tools/cmd/critest) into bin/
	cd tools && GOSUMDB=off GOFLAGS=-mod=mod $(GO) test -c -o ../$(BIN)/critest sigs.k8s.io/cri-tools/cmd/critest

# critest's images are built from Debian's dynamic busybox (its applets run as
# separate processes, which the masked-paths spec needs); the package is only
# downloaded and unpacked, never installed (it conflicts with busybox-static).
$(CRITEST_DEPS)/busybox:
	rm -rf $(CRITEST_DEPS) && mkdir -p $(CRITEST_DEPS)/deb
	cd $(CRITEST_DEPS)/deb && apt-get download busybox
	dpkg-deb -x $(CRITEST_DEPS)/deb/busybox_*.deb $(CRITEST_DEPS)/unpacked
	cp $(CRITEST_DEPS)/unpacked/bin/busybox $@

CRITEST_FOCUS ?=
critest: runc-bin critest-bin $(CRITEST_DEPS)/busybox ## run critest offline against a berth serve of its own (root; CRITEST_FOCUS=regexp narrows it)
	BERTH_CRITEST=$(abspath $(BIN)/critest) BERTH_CRITEST_BUSYBOX=$(abspath $(CRITEST_DEPS)/busybox) \
	BERTH_CRITEST_FOCUS='$(CRITEST_FOCUS)' $(GO) test -count=1 -v -timeout 40m ./test/critest/

# $(call kube_build,OUTPUT,COMMANDS): go build in tools/kube$(KUBE_VERSION).
kube_build = cd tools/kube$(KUBE_VERSION) && GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
	$(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(1) $(addprefix k8s.io/kubernetes/cmd/,$(2))

# $(call kube_go_build,OUTPUT,PACKAGE): go build of any package in tools/kube$(KUBE_VERSION).
kube_go_build = cd tools/kube$(KUBE_VERSION) && GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
	$(GO) build -trimpath -ldflags '-s -w' -o $(1) $(2)

kube-bin: ## build kubelet, kubectl, kube-apiserver, kube-controller-manager, kube-scheduler into bin/kube-<version>/ (KUBE_VERSION=1.37 or 1.34, tools/kube<version>)
	mkdir -p $(KUBE_BIN)
	$(call kube_build,$(abspath $(KUBE_BIN))/,$(KUBE_CMDS))

kubelet-bin: ## build only kubelet into bin/kube-<version>/ (KUBE_VERSION=1.37 or 1.34)
	mkdir -p $(KUBE_BIN)
	$(call kube_build,$(abspath $(KUBE_BIN))/kubelet,kubelet)

# e2e.test is the compiled test/e2e package (`go test -c`), the suite whose
# [NodeConformance] specs test/cluster/conformance runs against a cluster on
# berth. e2e.test takes --ginkgo.* flags itself; the ginkgo CLI (same
# version as e2e.test's ginkgo) only runs it in parallel processes. agnhost
# is built from its source for the conformance images.
e2e-bin: ## build e2e.test (k8s.io/kubernetes/test/e2e, go test -c), agnhost and the ginkgo CLI into bin/kube-<version>/ (KUBE_VERSION=1.37)
	mkdir -p $(KUBE_BIN)
	cd tools/kube$(KUBE_VERSION) && GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
		$(GO) test -c -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(abspath $(KUBE_BIN))/e2e.test k8s.io/kubernetes/test/e2e
	$(call kube_go_build,$(abspath $(KUBE_BIN))/agnhost,k8s.io/kubernetes/test/images/agnhost)
	$(call kube_go_build,$(abspath $(KUBE_BIN))/ginkgo,github.com/onsi/ginkgo/v2/ginkgo)

# The conformance images' host programs: critest's dynamic busybox,
# netcat-openbsd's nc (downloaded and unpacked, never installed: the specs
# run `nc -u`, which busybox's nc lacks), berth-pause as /pause and nnp.
$(CONFORMANCE_DEPS)/nc:
	rm -rf $(CONFORMANCE_DEPS)/deb $(CONFORMANCE_DEPS)/unpacked && mkdir -p $(CONFORMANCE_DEPS)/deb
	cd $(CONFORMANCE_DEPS)/deb && apt-get download netcat-openbsd
	dpkg-deb -x $(CONFORMANCE_DEPS)/deb/netcat-openbsd_*.deb $(CONFORMANCE_DEPS)/unpacked
	cp $(CONFORMANCE_DEPS)/unpacked/bin/nc.openbsd $@

conformance-deps: $(CRITEST_DEPS)/busybox $(CONFORMANCE_DEPS)/nc ## the host programs of the node conformance images into bin/conformance-deps/
	cp $(CRITEST_DEPS)/busybox $(CONFORMANCE_DEPS)/busybox
	CGO_ENABLED=0 $(GO) build -trimpath -o $(CONFORMANCE_DEPS)/pause ./cmd/berth-pause
	CGO_ENABLED=0 $(GO) build -trimpath -o $(CONFORMANCE_DEPS)/nonewprivs ./test/critest/cmd/nonewprivs

etcd-bin: ## build etcd 3.6 (go.etcd.io/etcd/server/v3, pinned in tools/etcd) into bin/
	cd tools/etcd && GOSUMDB=off GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' \
		-o $(abspath $(BIN))/etcd go.etcd.io/etcd/server/v3

test-kubelet: runc-bin kubelet-bin ## run an upstream kubelet (KUBE_VERSION=1.37 or 1.34) in standalone mode against a berth serve of its own (root)
	BERTH_KUBELET=$(abspath $(KUBE_BIN))/kubelet $(GO) test -count=1 -v -timeout 15m ./test/kubelet/

# The node conformance specs run in the 1.37 cluster only: results.txt is e2e.test v1.37.2's.
CONFORMANCE ?= $(if $(filter 1.37,$(KUBE_VERSION)),1,0)
CONFORMANCE_ON = $(filter 1,$(CONFORMANCE))
# The cluster's control plane and kubectl are 1.37's whatever the kubelet's
# version (CONTROL_PLANE_VERSION): a 1.34 kubelet under a 1.37 API server is
# a skew Kubernetes supports (kubelet up to three minor versions older), as
# a cluster being upgraded runs, and CI builds one control plane, not two.
CONTROL_PLANE_VERSION ?= 1.37
control-plane-bin:
	$(MAKE) kube-bin KUBE_VERSION=$(CONTROL_PLANE_VERSION)
test-cluster: runc-bin kubelet-bin control-plane-bin etcd-bin $(if $(CONFORMANCE_ON),e2e-bin conformance-deps) ## a one-node Kubernetes cluster (etcd, API server, controllers, scheduler of CONTROL_PLANE_VERSION, 1.37; a kubelet of KUBE_VERSION, 1.37 or 1.34) on a berth serve of its own: kubectl scenarios, then with 1.37 the [NodeConformance] specs (CONFORMANCE=0 leaves them out) (root)
	BERTH_KUBE_BIN=$(abspath $(BIN))/kube-$(CONTROL_PLANE_VERSION) BERTH_KUBELET=$(abspath $(KUBE_BIN))/kubelet BERTH_ETCD=$(abspath $(BIN))/etcd \
	$(if $(CONFORMANCE_ON),BERTH_CONFORMANCE_DEPS=$(abspath $(CONFORMANCE_DEPS))) \
		$(GO) test -count=1 -v -timeout 70m ./test/cluster/

test-conformance-slow: kube-bin etcd-bin e2e-bin conformance-deps ## the [NodeConformance] specs tagged [Slow], which CI skips for time, in the 1.37 cluster; writes test/cluster/conformance/results-slow.txt (root; hours)
	BERTH_KUBE_BIN=$(abspath $(KUBE_BIN)) BERTH_ETCD=$(abspath $(BIN))/etcd BERTH_CONFORMANCE_DEPS=$(abspath $(CONFORMANCE_DEPS)) \
	BERTH_CONFORMANCE_SLOW=1 BERTH_CONFORMANCE_UPDATE=1 $(GO) test -count=1 -v -timeout 4h -run 'TestCluster/conformance' ./test/cluster/

clean: ## remove build output
	rm -rf $(BIN)
