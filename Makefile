# benchflow — run `make help` for the targets.
GO        ?= go
BIN       := bin/benchflow
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
TAGS      ?= arrow_json_stdlib
PKGS      := ./...

.PHONY: help build build-debug test test-busy caddy testacc testacc-k8s testacc-nomad cluster-build cluster-up cluster-down bench bench-h3 bench-latency bench-bins lint fmt-check fmt images clean fuzz

help: ## List the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

# The release build strips the symbol table and DWARF (-s -w): a third of
# the binary's size that users do not need (panics still print file:line
# stacks). build-debug keeps them, for dlv and perf. arrow_json_stdlib is
# arrow-go's switch from goccy/go-json to encoding/json for Arrow's own
# JSON, which no table of ours uses (no nested columns): 1.4 MB less.
# docs/performance.md, "Binary size and start-up".
build: ## Build bin/benchflow (stripped: -trimpath -s -w)
	$(GO) build -trimpath -tags "$(TAGS)" -ldflags "-s -w $(LDFLAGS)" -o $(BIN) ./cmd/benchflow

build-debug: ## Build bin/benchflow with symbols and DWARF (for dlv, perf)
	$(GO) build -trimpath -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/benchflow

# After the whole suite, the load generator again on each engine alone (the
# automatic choice mixes epoll and uring): goroutines (what TLS targets
# use), epoll and uring (skipped, saying why, where io_uring cannot run).
# A failing run does not stop the others; the target fails at the end.
test: build ## Run the whole test suite (Docker tests skip without an engine); every run goes, then it fails if one failed
	@fail=0; \
	BENCHFLOW_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 40m $(PKGS) || fail=1; \
	for e in goroutines epoll uring; do \
		BENCHFLOW_LOAD_ENGINE=$$e $(GO) test -count=1 -timeout 10m ./engine/load || fail=1; \
	done; \
	if [ $$fail -ne 0 ]; then echo "make test: some test runs failed (see above)"; exit 1; fi

# The suite on a busy machine: BUSY (default 2) CPU-bound loops run beside
# it for its whole length, as on a shared CI runner or a laptop doing
# something else; they are stopped by pid when it ends, pass or fail.
BUSY ?= 2
test-busy: build ## The whole suite with BUSY (default 2) CPU-bound loops running beside it
	@pids=""; i=0; \
	while [ $$i -lt $(BUSY) ]; do sh -c 'while :; do :; done' & pids="$$pids $$!"; i=$$((i+1)); done; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	echo "make test-busy: busy loops $$pids"; \
	$(MAKE) --no-print-directory test; rc=$$?; \
	kill $$pids 2>/dev/null; exit $$rc

# Caddy, the real HTTP/1.1 + HTTP/2 + HTTP/3 server of the load generator's
# tests (engine/load caddy_test.go, cmd/benchflow caddy_e2e_test.go), built
# from the Go module proxy into BENCHFLOW_CADDY_CACHE (default
# /var/cache/benchflow-caddy), outside the work tree. Without it those tests skip.
caddy: ## Build Caddy v2.11.9 for the real-server tests (cached outside the tree; prints its path)
	./engine/load/testdata/caddy/build.sh

testacc: build ## Acceptance tests against real clusters (needs BENCHFLOW_ACC=1 and cluster settings)
	BENCHFLOW_ACC=1 BENCHFLOW_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 60m -run 'Acc' $(PKGS)

testacc-nomad: build ## The nomad provider's acceptance tests (after eval "$$(providers/nomad/realstack/up.sh)"; docs/gateway.md)
	@test -n "$$NOMAD_ADDR" || { echo "NOMAD_ADDR is not set: eval \"\$$(providers/nomad/realstack/up.sh)\" first (docs/gateway.md)"; exit 1; }
	BENCHFLOW_ACC=1 BENCHFLOW_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 30m -run 'Acc' -v ./providers/nomad/...

# The local single-node Kubernetes cluster (providers/k8s/localcluster; versions in
# its versions.env). Builds and state live outside the work tree, in
# BENCHFLOW_CLUSTER_CACHE (default /var/cache/benchflow-cluster) and
# BENCHFLOW_CLUSTER_STATE (default /run/benchflow-cluster).
CLUSTER         := providers/k8s/localcluster
CLUSTER_STATE   ?= $(or $(BENCHFLOW_CLUSTER_STATE),/run/benchflow-cluster)

cluster-build: ## Build the local cluster's binaries and images (cached; ~30 min cold)
	./$(CLUSTER)/build.sh

cluster-up: ## Start the local single-node Kubernetes cluster (builds it first if needed; root)
	./$(CLUSTER)/up.sh

cluster-down: ## Stop the local cluster and check the machine is as before cluster-up
	./$(CLUSTER)/down.sh

testacc-k8s: build ## The k8s acceptance tests against the local cluster (after make cluster-up)
	@test -f $(CLUSTER_STATE)/env || { echo "no $(CLUSTER_STATE)/env: run make cluster-up first"; exit 1; }
	set -a && . $(CLUSTER_STATE)/env && set +a && \
	BENCHFLOW_ACC=1 BENCHFLOW_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 30m -run 'Acc' -v ./providers/k8s/...

bench: build bench-bins ## Benchmarks: Go benchmarks, the wrk, h2load and HTTP/3 comparison scripts, latency accuracy
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	# Both placements: shared cores (PIN=0, as a user's run) and server and
	# client on cores of their own (PIN=1), each against its floor.
	for pin in 0 1; do \
		PIN=$$pin FLOOR=bin/floor ENGINES="uring epoll" ./engine/load/bench/compare-wrk.sh $(BIN) && \
		PIN=$$pin FLOOR=bin/h2floor ./engine/load/bench/compare-h2load.sh $(BIN) || exit 1; \
	done
	ENGINES="uring epoll" BFFLAGS="--busy-poll 20us" CASES="6b 1k" ./engine/load/bench/compare-wrk.sh $(BIN)
	BFFLAGS="--busy-poll 10us" ./engine/load/bench/compare-h2load.sh $(BIN)
	STREAMS=10 BFFLAGS="--nap 50us" ./engine/load/bench/compare-h2load.sh $(BIN)
	# HTTP/3: benchflow --h3 against quic-go's plain loop (h3floor) on
	# quic-go's server (h3server), both placements.
	for pin in 0 1; do PIN=$$pin ./engine/load/bench/compare-h3.sh $(BIN) || exit 1; done
	# Latency accuracy: p50 against a known service time, and the
	# coordinated-omission check, HTTP/1.1, h2 and h3.
	./engine/load/bench/latency.sh $(BIN)

bench-latency: build ## Latency accuracy alone: p50 against serve --delay 20ms and a stall check, every protocol
	./engine/load/bench/latency.sh $(BIN)

bench-h3: build bench-bins ## The HTTP/3 comparison alone, short (PAIRS=1 DURATION=2s unless set)
	PAIRS=$${PAIRS:-1} DURATION=$${DURATION:-2s} ./engine/load/bench/compare-h3.sh $(BIN)

# The floors and the HTTP/3 server the comparison scripts run, in bin/.
bench-bins:
	$(GO) build -o bin/floor ./engine/load/bench/floor
	$(GO) build -o bin/h2floor ./engine/load/bench/h2floor
	$(GO) build -o bin/h3floor ./engine/load/bench/h3floor
	$(GO) build -o bin/h3server ./engine/load/bench/h3server

FUZZTIME ?= 30s
FUZZ_TARGETS := ./engine/hclconf:FuzzParsePipeline ./engine/starconf:FuzzParseStar \
	./engine/load:FuzzParseResponse ./engine/collect:FuzzParseStat ./engine/collect:FuzzParseNetDev \
	./engine/tune:FuzzParseCPUList ./engine/load:FuzzStatusDecoder

fuzz: ## Run each fuzz target for FUZZTIME (default 30s); corpora live in testdata/fuzz
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "== $$pkg $$fn"; $(GO) test $$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || exit 1; done

lint: ## go vet
	$(GO) vet $(PKGS)

fmt-check: ## Fail if any file is not gofmt-ed
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi

fmt: ## gofmt every file
	gofmt -w $$(git ls-files '*.go')

images: build ## Build the local Docker images tests and examples use (no registry needed)
	./providers/docker/images/build.sh

clean: ## Remove build outputs
	rm -rf bin
