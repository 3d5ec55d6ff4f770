# cup's Makefile. `make help` lists the targets.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules --no-print-directory

TOOLS := $(CURDIR)/.tools
BUF := tools/node_modules/.bin/buf
PROTOVALIDATE_VERSION := v1.2.2
GO_TEST_FLAGS ?= -race -count=1 -timeout 20m
# npm ci installs exactly a package-lock.json, quietly.
NPM_CI := npm ci --no-audit --no-fund --loglevel=error
# Go modules beside the main one: the WASM SDK and the example controllers and reconcilers.
GO_MODULES := sdk/go examples/controllers/flagfile examples/reconcilers/flagbundle

.PHONY: help
help: ## Describe the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: tools
tools: $(TOOLS)/.installed ## Install pinned code generators into .tools and tools/node_modules

$(TOOLS)/.installed: go.mod go.sum tools/package.json tools/package-lock.json
	mkdir -p $(TOOLS)/bin
	GOBIN=$(TOOLS)/bin go install google.golang.org/protobuf/cmd/protoc-gen-go connectrpc.com/connect/cmd/protoc-gen-connect-go
	cd tools && $(NPM_CI)
	rm -rf $(TOOLS)/protovalidate
	dir=$$(go mod download -json github.com/bufbuild/protovalidate@$(PROTOVALIDATE_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
		cp -R "$$dir/proto/protovalidate" $(TOOLS)/protovalidate; chmod -R u+w $(TOOLS)/protovalidate
	touch $@

.PHONY: generate
generate: tools ## Generate Go and TypeScript code from proto/ into gen/
	$(BUF) lint
	$(BUF) generate --path proto/cup
	cp tools/gen-ts-package.json gen/ts/package.json
	gofmt -l gen >/dev/null

# gen/ts is an npm package (@cup-dev/api) that other projects install by
# path: `npm install ../cup/gen/ts` links it, and Node.js resolves a linked
# package's imports from where it lies, so its one dependency,
# @bufbuild/protobuf, is installed beside it (devDependencies; the consumer's
# own copy is its peer dependency). `npm pack gen/ts` needs none of this.
GEN_TS_DEPS := gen/ts/node_modules/@bufbuild/protobuf/package.json

.PHONY: ts-package
ts-package: $(GEN_TS_DEPS) ## Make gen/ts installable by path from other projects (npm install ../cup/gen/ts)

$(GEN_TS_DEPS): gen/ts/package.json
	cd gen/ts && npm install --no-package-lock --no-audit --no-fund --loglevel=error
	touch $@

.PHONY: checkgenerate
checkgenerate: generate ## Fail when `make generate` changes any file
	@if [ -n "$$(git status --porcelain -- gen proto)" ]; then \
		git status --porcelain -- gen proto; git diff --stat -- gen; \
		echo "error: generated code is out of date: run make generate and commit" >&2; exit 1; fi

.PHONY: lint
lint: tools ## Run buf lint, go vet and gofmt checks
	$(BUF) lint
	go vet ./...
	for m in $(GO_MODULES); do go -C $$m vet ./...; done
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$out" ]; then echo "gofmt: $$out" >&2; exit 1; fi

# The demo's WASM module, which cupd embeds when it is there at build time.
# It is build output: never committed (.gitignore), and removed again after
# `make build`, so that `go run` and the tests build it from its source
# (examples.DemoWASM) rather than embed a stale copy.
DEMO_WASM := examples/demo/.cup/flagfile.wasm
DEMO_BUNDLE_WASM := examples/demo/.cup/flagbundle.wasm

.PHONY: build
build: examples ui ## Build cupd and cup into bin/; cupd embeds the demo's WASM module and the web UI
	cp bin/flagfile.wasm $(DEMO_WASM)
	cp bin/flagbundle.wasm $(DEMO_BUNDLE_WASM)
	go build -o bin/ ./cmd/... || { rm -f $(DEMO_WASM) $(DEMO_BUNDLE_WASM); exit 1; }
	rm -f $(DEMO_WASM) $(DEMO_BUNDLE_WASM)

# The web UI (web/), built by Vite into web/dist/app, which cupd embeds
# (web/embed.go) and serves at /ui/. Build output, never committed; rebuilt
# when its sources, its packages or the generated client (gen/ts) change.
UI_INDEX := web/dist/app/index.html
UI_SOURCES := $(shell find web/src web/public gen/ts -path gen/ts/node_modules -prune -o -type f -print 2>/dev/null) \
	web/index.html web/package.json web/package-lock.json web/tsconfig.json web/vite.config.ts

.PHONY: ui
ui: $(UI_INDEX) ## Build the web UI into web/dist/app (npm ci, then vite), which cupd embeds

# npm ci writes node_modules/.package-lock.json: packages are installed
# again only when the lock file changes.
web/node_modules/.package-lock.json: web/package.json web/package-lock.json
	cd web && $(NPM_CI)
	touch $@

$(UI_INDEX): web/node_modules/.package-lock.json $(UI_SOURCES)
	cd web && npm run build
	touch $@

.PHONY: run
run: ui ## Run cupd on its embedded demo, with the web UI, at http://127.0.0.1:8181/ui/
	go run ./cmd/cupd

.PHONY: examples
examples: ## Build the example WASM modules into bin/ (bin/flagfile.wasm, bin/flagbundle.wasm)
	GOOS=wasip1 GOARCH=wasm GOWORK=off go -C examples/controllers/flagfile build -trimpath -ldflags='-s -w' -o $(CURDIR)/bin/flagfile.wasm ./
	GOOS=wasip1 GOARCH=wasm GOWORK=off go -C examples/reconcilers/flagbundle build -trimpath -ldflags='-s -w' -o $(CURDIR)/bin/flagbundle.wasm ./

# testfmt turns `go test -json` into a line per package as it finishes, each
# failure in full as it happens, and a summary (internal/cmd/testfmt).
TESTFMT := $(TOOLS)/bin/testfmt
# phase prints the header of a phase of the tests.
phase = @printf '\n=== %s\n' '$(1)'
GO_TEST_SHORT_FLAGS ?= -short -timeout 10m

$(TESTFMT): $(wildcard internal/cmd/testfmt/*.go)
	go build -o $@ ./internal/cmd/testfmt

.PHONY: test
test: ## Run every test: Go (race detector on), the SDK, the TypeScript client, the web UI in Chromium, a short soak, each fuzz target briefly
	@start=$$(date +%s); \
		$(MAKE) test-go test-sdk test-ts test-ui test-soak test-fuzz; \
		printf '\nmake test: every phase passed in %ss\n' $$(( $$(date +%s) - start ))

.PHONY: test-short
test-short: $(TESTFMT) ## The inner loop: the Go tests with -short, results cached; no race detector, soak, fuzzing or TypeScript
	$(call phase,Go tests of every module: go test -short)
	go test -json $(GO_TEST_SHORT_FLAGS) ./... | $(TESTFMT)
	for m in $(GO_MODULES); do go -C $$m test -json $(GO_TEST_SHORT_FLAGS) ./... | $(TESTFMT); done

.PHONY: test-go
test-go: $(TESTFMT) ## Run the Go tests with the race detector
	$(call phase,Go tests with the race detector: go test ./...)
	go test -json $(GO_TEST_FLAGS) ./... | $(TESTFMT)

.PHONY: test-sdk
test-sdk: $(TESTFMT) ## Run the Go tests of the WASM SDK and the example controllers and reconcilers
	$(call phase,SDK and examples: $(GO_MODULES))
	for m in $(GO_MODULES); do go -C $$m test -json $(GO_TEST_FLAGS) ./... | $(TESTFMT); done

.PHONY: test-ts
test-ts: ts-package ## Test the generated TypeScript package against a real cupd, and installed by path and from npm pack
	$(call phase,TypeScript client against a real cupd: test/ts)
	cd test/ts && $(NPM_CI) && node --preserve-symlinks --test

# CHROMIUM is the browser the UI tests drive (test/ui/harness.js).
CHROMIUM ?= /usr/bin/chromium

.PHONY: test-ui
test-ui: ui ## Test the web UI in a headless Chromium (CHROMIUM, default /usr/bin/chromium) against a real cupd
	$(call phase,Web UI in headless Chromium against a real cupd: test/ui)
	cd test/ui && $(NPM_CI) && CHROMIUM=$(CHROMIUM) node --preserve-symlinks --test

.PHONY: ui-figures
ui-figures: ui ## Measure the web UI in headless Chromium: its first load, and lists of 1,000 and 10,000 resources
	cd test/ui && $(NPM_CI) && CHROMIUM=$(CHROMIUM) node --preserve-symlinks figures.js

# The Gitea the end-to-end test runs against, built once into GITEA_CACHE.
GITEA_VERSION ?= 1.26.0
GITEA_CACHE ?= $(HOME)/.cache/cup-gitea

.PHONY: test-gitea
test-gitea: ## Run cupd against a real Gitea on 127.0.0.1 (builds Gitea once into ~/.cache/cup-gitea: about 11 minutes)
	gitea=$$(GITEA_CACHE=$(GITEA_CACHE) test/gitea/build.sh $(GITEA_VERSION)); \
		CUP_GITEA=$$gitea go test -count=1 -v -run '^TestGiteaEndToEnd$$' ./cmd/cupd

.PHONY: bench
bench: ## Run the Go benchmarks
	go test -run '^$$' -bench . -benchmem ./...

# The fuzz targets, as package directory:Name, which `make fuzz` runs one
# after another, each in its package's module.
FUZZ_TARGETS := \
	./controller:FuzzParseResource \
	./controller:FuzzParseCommon \
	./controller:FuzzCompactJSON \
	./controller/template:FuzzPaths \
	./controller/template:FuzzFiles \
	./controller/wasm:FuzzInterruptible \
	./internal/config:FuzzLoad \
	./internal/gitfs:FuzzTreeDelta \
	./internal/gitfs:FuzzLooseOrderParsers \
	./internal/gitfs:FuzzStoredZlib \
	./server:FuzzLabelSet \
	./server:FuzzREST \
	./server:FuzzPutBody \
	./examples/controllers/flagfile:FuzzFastEntry \
	./examples/controllers/flagfile:FuzzSeek \
	./sdk/go/controller:FuzzAppendJSON \
	./sdk/go/controller:FuzzCompactJSON
FUZZTIME ?= 5s

.PHONY: fuzz
fuzz: ## Run each fuzz target briefly (FUZZTIME, default 5s)
	for t in $(FUZZ_TARGETS); do \
		echo "--- fuzz $$t for $(FUZZTIME)"; \
		GOWORK=off go -C "$${t%%:*}" test -run '^$$' -fuzz "^$${t#*:}"'$$' -fuzztime $(FUZZTIME) . || exit 1; \
	done

.PHONY: test-fuzz
test-fuzz: ## Run each fuzz target for 3 seconds (CI)
	$(call phase,Fuzzing: each target for 3 seconds)
	$(MAKE) fuzz FUZZTIME=3s

# BASELINE is a cupd binary that make load measures beside bin/cupd, e.g. one
# built from an older commit: make load BASELINE=/path/to/old/cupd.
BASELINE ?=

.PHONY: load
load: build ## Measure bin/cupd (and BASELINE, when set, in the same run) on generated repositories: a table of figures, about 10 minutes
	go build -o bin/ ./internal/cmd/cupbench
	bin/cupbench -cupd bin/cupd $(if $(BASELINE),-baseline $(BASELINE))

.PHONY: soak
soak: ## Soak a real cupd for 5 minutes: concurrent writers and readers, then check every write, the remote and for leaks
	go run ./internal/cmd/cupsoak -duration 5m

.PHONY: soak-replicas
soak-replicas: ## Soak 3 cupd replicas on one remote for 5 minutes: writes through any, watchers on each, idempotency across them
	go run ./internal/cmd/cupsoak -duration 5m -replicas 3

.PHONY: test-soak
test-soak: ## A short bounded soak for CI: the run, checks included, ends within 60 seconds
	$(call phase,Soak: a real cupd under concurrent writers and readers for 20 seconds)
	go build -o bin/ ./cmd/cupd ./internal/cmd/cupsoak
	bin/cupsoak -cupd bin/cupd -duration 20s -warmup 2s -settle 10s -resources 500 -timeout 60s

ATTACK_SCALE ?= 1

.PHONY: attack
attack: ## Run each attack on a real cupd and report its RSS
	go build -o bin/ ./cmd/cupd ./internal/cmd/cupattack
	bin/cupattack -cupd bin/cupd -scale $(ATTACK_SCALE)

.PHONY: demo
demo: ## Run cupd on its embedded demo repository
	go run ./cmd/cupd serve
