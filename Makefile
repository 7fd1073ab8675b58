# benchflow — run `make help` for the targets.
GO        ?= go
BIN       := bin/benchflow
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
PKGS      := ./...

.PHONY: help build test testacc bench lint fmt-check fmt images clean fuzz

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/benchflow
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/benchflow

test: build ## Run the whole test suite (Docker tests skip without an engine)
	BENCHFLOW_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 40m $(PKGS)
	# The load generator again on its goroutine engine (what TLS targets use).
	BENCHFLOW_LOAD_ENGINE=goroutines $(GO) test -count=1 -timeout 10m ./engine/load

testacc: build ## Acceptance tests against real clusters (needs BENCHFLOW_ACC=1 and cluster settings)
	BENCHFLOW_ACC=1 BENCHFLOW_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 60m -run 'Acc' $(PKGS)

bench: build ## Benchmarks: Go benchmarks and the wrk comparison script
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	./engine/load/bench/compare-wrk.sh $(BIN)
	BFFLAGS="--busy-poll 20us" CASES="6b 1k" ./engine/load/bench/compare-wrk.sh $(BIN)

FUZZTIME ?= 30s
FUZZ_TARGETS := ./engine/hclconf:FuzzParsePipeline ./engine/starconf:FuzzParseStar \
	./engine/load:FuzzParseResponse ./engine/collect:FuzzParseStat ./engine/collect:FuzzParseNetDev \
	./engine/tune:FuzzParseCPUList

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
