# Keel — see README.md. Every target installs what it needs itself.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
export GOFLAGS := -buildvcs=false

FUNCTIONS := $(notdir $(wildcard functions/*))

.PHONY: all build fmt lint vet staticcheck test test-race test-go demo dev bench tools

all: build

build:
	$(GO) build ./...
	@for f in $(FUNCTIONS); do $(MAKE) --no-print-directory build-$$f || exit 1; done

# build-NAME: an arm64 Lambda bootstrap for functions/NAME.
build-%:
	@mkdir -p dist/$*
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -ldflags "-s -w" -o dist/$*/bootstrap ./functions/$*

fmt:
	gofmt -w $$(git ls-files '*.go')

$(BIN)/staticcheck:
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

tools: $(BIN)/staticcheck

lint: $(BIN)/staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...

# test: everything CI runs. Long soaks and benchmarks have their own targets.
test: lint test-asl test-go

test-go:
	$(GO) test -count=1 -timeout 12m ./...

test-race:
	$(GO) test -race -count=1 -timeout 20m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

# test-asl: check stepfunctions/run.asl.json with the npm asl-validator (an
# independent schema check), pinned by stepfunctions/package-lock.json.
ASL_VALIDATOR := stepfunctions/node_modules/.bin/asl-validator

$(ASL_VALIDATOR): stepfunctions/package.json stepfunctions/package-lock.json
	cd stepfunctions && npm ci --no-audit --no-fund --prefer-offline
	@touch $@

.PHONY: test-asl
test-asl: $(ASL_VALIDATOR)
	$(ASL_VALIDATOR) --json-path stepfunctions/run.asl.json
