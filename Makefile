# Keel — see README.md. Every target installs what it needs itself.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
export GOFLAGS := -buildvcs=false

.PHONY: all build build-app fmt lint vet staticcheck check test test-race test-go test-bins bench tools

all: build

# build: every package compiles and every program links, into bin/all/
# (not discarded, as a plain go build ./... does), so that the next build
# links again only the programs whose code changed.
build:
	@mkdir -p $(BIN)/all
	$(GO) build -o $(BIN)/all/ ./...

comma := ,
# build-app: the one Keel program as every function and the task run it on
# AWS — a static linux/arm64 binary of APP (default ./cmd/keel) in
# dist/bootstrap. `make synth` builds it by itself; this is for a look.
# The tags are the CDK app's: keel_lambda leaves SQLite, keel dev and
# crashtest out; BUILD_TAGS=keel_no_openai,keel_no_anthropic drops providers;
# ROLE=api (step, approval, finalize, schedule, sweep, task) builds that
# role's bootstrap with its capability tags, as the CDK app does for each
# function (infra/cdk RoleTags).
build-app:
	@mkdir -p dist
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags lambda.norpc,keel_lambda,grpcnotrace$(if $(ROLE),$(comma)keel_role_$(ROLE)$(comma)keel_env_aws$(if $(filter step task,$(ROLE)),,$(comma)keel_no_models))$(if $(BUILD_TAGS),$(comma)$(BUILD_TAGS)) -ldflags "-s -w" -o dist/bootstrap $(or $(APP),./cmd/keel)

fmt:
	gofmt -w $$(git ls-files '*.go')

$(BIN)/staticcheck:
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

tools: $(BIN)/staticcheck

lint: $(BIN)/staticcheck
	bash scripts/check-tracked.sh
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...

# check: the fast loop, in a minute or two with a warm build cache: build,
# lint (gofmt, vet, staticcheck) and go test -short, where every test that
# builds a program, runs one in a child process (keel dev, kills,
# emulators) or is slow otherwise skips itself, naming the make target
# that runs it. Test results are cached: an unchanged package is not run
# again.
check: build lint
	$(GO) test -short ./...

# test: everything CI runs (.ci/run), through scripts/suites.sh: test-bins
# first, once for every suite, then TEST_SUITES, TEST_JOBS at once
# (default 2, this machine's cores; TEST_JOBS=1: one after another), the
# longest first so that the short ones fill in beside them. Each suite's
# output is printed whole when it ends; a table of each suite's seconds,
# CPU seconds and result ends the run, also when one failed (then make
# test fails). Long soaks and benchmarks have their own targets.
TEST_SUITES := test-go lint aws-local-e2e test-cdk test-viewer test-examples test-asl
TEST_JOBS ?= 2
test:
	@TEST_JOBS=$(TEST_JOBS) bash scripts/suites.sh test-bins -- $(TEST_SUITES)

# test-bins: the stock program and the publication server, built once and
# shared by the suites: the Go tests that run them find them through
# TESTBIN_KEEL and TESTBIN_PUBSERVER (internal/testbin, which builds them
# once per test binary when unset), test-viewer runs the same keel.
TESTBIN_ENV := TESTBIN_KEEL=$(BIN)/keel TESTBIN_PUBSERVER=$(BIN)/pubserver
test-bins:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/keel ./cmd/keel
	$(GO) build -o $(BIN)/pubserver ./internal/cmd/pubserver

# sandbox-deps: the run sandbox (internal/sandbox) isolates commands with
# Debian's bubblewrap, and relays AllowHosts' proxy into it with socat; its
# isolation tests also use curl. Installed with
# apt-get when missing (as root), as test-viewer installs Chromium.
.PHONY: sandbox-deps
sandbox-deps:
	@missing=""; command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	command -v socat >/dev/null 2>&1 || missing="$$missing socat"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	if [ -n "$$missing" ]; then \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			echo "sandbox-deps: installing$$missing"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) || \
				{ echo "sandbox-deps: apt-get install$$missing failed"; exit 1; }; \
		else echo "sandbox-deps: missing$$missing and apt-get cannot install it here: the sandbox tests will skip"; fi; \
	fi

# test-go: every Go test of the module, GO_TEST_P test binaries at once
# (go test -p; their slowest packages wait on child processes more than
# they compute), the slowest packages named first so that go test starts
# them first, beside the many short ones rather than alone at the end.
# Its second line: the deployed builds' telemetry path (otlphttp, -tags
# keel_lambda) end to end.
GO_TEST_P ?= 3
SLOW_PKGS := ./internal/proof/crash ./internal/mcptool ./internal/cli ./internal/mcpserve ./bench/lambda ./internal/proof/upgrade .
test-go: sandbox-deps test-bins
	$(TESTBIN_ENV) $(GO) test -count=1 -p $(GO_TEST_P) -timeout 12m $(SLOW_PKGS) ./...
	$(TESTBIN_ENV) $(GO) test -count=1 -tags keel_lambda -run 'TestTelemetryOverTheWire|TestLambdaInvocationFlushes|TestSampler|TestOffCostsNothing' ./internal/observe/otelkeel/... ./internal/compose

test-race: test-bins
	$(TESTBIN_ENV) $(GO) test -race -count=1 -timeout 20m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

# bench-load: N (default 1000) concurrent research runs through keel dev's
# API, approved as they ask (bench/load); NO_GROUP=1 gives every write its
# own fsync, as before group commit. bench-long: one run of N (default
# 100000) iterations through rollover (bench/long). Both print figures;
# neither is part of make test (their smoke tests are). N is soak's variable
# too: only an N given on the command line reaches these.
CLI_N = $(if $(filter command line,$(origin N)),$(N),$(1))
.PHONY: bench-load bench-long
bench-load:
	$(GO) run ./bench/load -n $(call CLI_N,1000) $(if $(NO_GROUP),-no-group)

bench-long:
	$(GO) run ./bench/long -n $(call CLI_N,100000)
# bench-peers: the same scripted loop on Keel, the floor (Go + SQLite, one
# append transaction per step, synchronous=FULL), LangGraph.js with its
# SQLite checkpointer and a Temporal dev server, at PEERS_N iterations;
# prints one table and writes bench/results/peers.json. A peer whose
# install fails is a skipped row with the reason. `make test` runs the
# N=10 smoke (bench/peers TestSmoke) on whatever is installed.
PEERS_N ?= 10,100,1000
TEMPORAL_CLI_VERSION := v1.5.1
# aws-lambda-rie, for bench-lambda and aws-local-e2e
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
LANGGRAPH_PKG := bench/peers/langgraph/node_modules/@langchain/langgraph-checkpoint-sqlite/package.json

$(BIN)/temporal:
	GOBIN=$(BIN) $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)

$(BIN)/aws-lambda-rie:
	GOBIN=$(BIN) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

# better-sqlite3 compiles from source here (no prebuilt download), against
# the headers of Debian's node (/usr/include/node).
$(LANGGRAPH_PKG): bench/peers/langgraph/package.json bench/peers/langgraph/package-lock.json
	cd bench/peers/langgraph && npm_config_nodedir=$${npm_config_nodedir:-/usr} npm ci --no-audit --no-fund --prefer-offline
	@touch $@

.PHONY: bench-peers bench-lambda
bench-peers:
	@$(MAKE) --no-print-directory $(BIN)/temporal || echo "bench-peers: the temporal CLI did not install; its rows will say so"
	@$(MAKE) --no-print-directory $(LANGGRAPH_PKG) || echo "bench-peers: LangGraph.js did not install; its rows will say so"
	$(GO) run ./bench/peers -n $(PEERS_N) -temporal $(BIN)/temporal -json bench/results/peers.json

# bench-lambda: each role's linux/arm64 bootstrap size (and the former
# one-binary builds, for comparison) and the time from exec to the first
# answered invocation, on a Runtime API of its own and under the AWS Lambda
# Runtime Interface Emulator (its own start and overhead shown apart);
# writes bench/results/lambda.json. ONLY=api measures one build; STARTS=21
# cold starts each way (default 5); BEFORE=DIR also measures each build
# from DIR, a checkout of an older commit, alternating with this one.
bench-lambda: $(BIN)/aws-lambda-rie
	$(GO) run ./bench/lambda -rie $(BIN)/aws-lambda-rie -only "$(ONLY)" -n $(or $(STARTS),5) $(if $(BEFORE),-before $(BEFORE)) -json bench/results/lambda.json

# test-asl: check stepfunctions/run.asl.json with the npm asl-validator (an
# independent schema check), pinned by stepfunctions/package-lock.json.
ASL_VALIDATOR := stepfunctions/node_modules/.bin/asl-validator

$(ASL_VALIDATOR): stepfunctions/package.json stepfunctions/package-lock.json
	cd stepfunctions && npm ci --no-audit --no-fund --prefer-offline
	@touch $@

.PHONY: test-asl
test-asl: $(ASL_VALIDATOR)
	$(ASL_VALIDATOR) --json-path stepfunctions/run.asl.json

# LocalStack end to end: the DynamoDB store and S3 artifact conformance
# suites against LocalStack (localstack/), then the scenarios of
# aws-local-e2e (internal/proof/awslocal TestLocalStack) with the functions in
# LocalStack's own Lambda containers. Without a Docker engine or
# LOCALSTACK_AUTH_TOKEN both targets say so and succeed, so they are safe
# to call anywhere.
LOCALSTACK_ENDPOINT ?= http://localhost:4566
LOCALSTACK_COMPOSE := docker compose -f localstack/docker-compose.yml

.PHONY: localstack-up localstack-down localstack-e2e
localstack-up:
	@if ! docker info >/dev/null 2>&1; then \
		echo "localstack-up: SKIPPED: no Docker engine (docker info failed)"; exit 0; fi; \
	$(LOCALSTACK_COMPOSE) up -d --wait

localstack-down:
	@if docker info >/dev/null 2>&1; then $(LOCALSTACK_COMPOSE) down; fi

localstack-e2e:
	@if ! docker info >/dev/null 2>&1; then \
		echo "localstack-e2e: SKIPPED: no Docker engine (docker info failed); the same suites ran in-process and the same scenarios on moto + aws-lambda-rie in 'make test'"; \
		exit 0; fi; \
	if [ -z "$$LOCALSTACK_AUTH_TOKEN" ]; then \
		echo "localstack-e2e: SKIPPED: LOCALSTACK_AUTH_TOKEN is not set (the LocalStack image needs one since 2026-03-23)"; \
		exit 0; fi; \
	$(MAKE) --no-print-directory localstack-up && \
	KEEL_E2E_LOCALSTACK=1 AWS_ENDPOINT_URL=$(LOCALSTACK_ENDPOINT) AWS_REGION=us-east-1 \
		$(GO) test -count=1 -timeout 15m -v -run 'TestConformance|TestRequestsPerCall|TestCheckpointSpillsToS3|TestForeignObjectIsCorrupt' \
		./internal/backend/store/dynamo/ ./internal/backend/artifact/s3/ && \
	$(MAKE) --no-print-directory $(AWSLOCAL_TEMPLATE) && \
	KEEL_E2E_LOCALSTACK=1 AWS_ENDPOINT_URL=$(LOCALSTACK_ENDPOINT) \
		$(GO) test -count=1 -timeout 30m -v -run 'TestBootstrapRebuild|TestLocalStack$$' ./internal/proof/awslocal/ | grep -v '^=== \(RUN\|PAUSE\|CONT\)'; \
	exit $${PIPESTATUS[0]}

# aws-local-e2e: the deployed topology on this machine (internal/proof/awslocal):
# moto (DynamoDB, S3, IAM, Lambda, Step Functions executing the definition)
# and the AWS Lambda Runtime Interface Emulator running the host-built
# bootstrap, one sandbox per function; table, bucket, roles, functions and
# state machine made from the synthesized template (`make synth`). Every
# scenario plays under moto's interpreter and under Keel's executor, and
# their traces must agree; the DynamoDB store's conformance suite runs on
# moto too (its indexes hold only their projected attributes, as
# DynamoDB's do). Skips with a message where python3 with moto is
# missing or aws-lambda-rie cannot be installed.
RIE := $(BIN)/aws-lambda-rie
PYTHON ?= python3
# The template is synthesized again only when what it is made from changed.
AWSLOCAL_TEMPLATE := infra/cdk/cdk.out/Keel.template.json
$(AWSLOCAL_TEMPLATE): $(wildcard infra/cdk/*.go) infra/cdk/cdk.json stepfunctions/run.asl.json
	$(MAKE) --no-print-directory synth >/dev/null

.PHONY: aws-local-e2e
aws-local-e2e:
	@if ! $(PYTHON) -c 'import moto, werkzeug' >/dev/null 2>&1; then \
		echo "aws-local-e2e: SKIPPED: $(PYTHON) with moto[server] is missing (pip install 'moto[server]==5.2.1')"; exit 0; fi; \
	if [ ! -x $(RIE) ] && ! GOBIN=$(BIN) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION); then \
		echo "aws-local-e2e: SKIPPED: aws-lambda-rie could not be installed"; exit 0; fi; \
	$(MAKE) --no-print-directory $(AWSLOCAL_TEMPLATE) && \
	KEEL_AWSLOCAL=1 KEEL_AWSLOCAL_RIE=$(RIE) KEEL_AWSLOCAL_PYTHON=$(PYTHON) \
		$(GO) test -count=1 -timeout 10m -v -run 'TestAWSLocal$$|TestLambdaPackages|TestLocalStackPackageOnMoto|TestStoreConformanceOnMoto|TestMCPTokenFromSecretsManagerOnMoto' ./internal/proof/awslocal/ | grep -v '^=== \(RUN\|PAUSE\|CONT\)'; \
	exit $${PIPESTATUS[0]}

# demo: the research agent end to end on the embedded default, with a crash
# at the worst moment and the recovery (README's first command).
.PHONY: demo dev
demo:
	@mkdir -p bin
	$(GO) build -o bin/keel ./cmd/keel
	$(GO) build -o bin/pubserver ./internal/cmd/pubserver
	$(GO) build -o bin/demo ./internal/cmd/demo
	./bin/demo -keel bin/keel -pubserver bin/pubserver

# dev: keel dev on .keel/ (Ctrl-C to stop).
dev:
	$(GO) build -o bin/keel ./cmd/keel
	./bin/keel dev
# AWS CDK app (infra/cdk: its own Go module, so the runtime's go.mod carries
# no CDK dependencies). The aws-cdk CLI is pinned in infra/cdk/package.json
# and runs from its node_modules through npx; nothing is installed globally.
# The app builds the Keel program itself at synth time: ONE linux/arm64
# binary that every Lambda function and the Fargate task run (KEEL_ROLE
# picks the role), so nothing needs building first.
# APP is that program's main package, relative to the repository root,
# possibly in a module of its own (default: ./cmd/keel, the stock app):
#   make synth APP=./examples/triage
# CDK_ARGS passes options through, e.g.
#   make deploy CDK_ARGS='-c keel:natGateways=2 --require-approval never'
CDK_DIR := infra/cdk
CDK_CLI := $(CDK_DIR)/node_modules/.bin/cdk
APP ?=
CDK_APP := $(if $(APP),-c keel:app=$(APP))
CDK_ARGS ?=

$(CDK_CLI): $(CDK_DIR)/package.json $(CDK_DIR)/package-lock.json
	cd $(CDK_DIR) && npm ci --no-audit --no-fund --prefer-offline
	@touch $@

.PHONY: synth deploy test-cdk
synth: $(CDK_CLI)
	cd $(CDK_DIR) && CDK_DISABLE_CLI_TELEMETRY=true npx --no -- cdk synth --no-notices --quiet $(CDK_APP) $(CDK_ARGS)
	@echo "synth: template and assets in $(CDK_DIR)/cdk.out/"

deploy: $(CDK_CLI)
	cd $(CDK_DIR) && npx --no -- cdk deploy $(CDK_APP) $(CDK_ARGS)

# test-cdk: synthesizes the stack in-process (fake account and region, no
# credentials, no network, no Docker) and asserts on the template.
test-cdk:
	cd $(CDK_DIR) && $(GO) vet . && $(GO) test -count=1 -timeout 30m .


# crash: Keel's crash suite (internal/proof/crash). Every hit of every fault point,
# the destination-contract variants, two writers, a stale writer, cancel in
# flight, an uncertain provider, a model stream cut, and faults in the
# long-running task child: real SIGKILLs of `keel dev` (child processes),
# restart, then the invariants. One row per scenario; exit 1 on a violation.
# STORE=dynamo runs them on the DynamoDB store and S3 artifacts (a table and
# a bucket per scenario) at AWS_ENDPOINT_URL when set (LocalStack), else on
# minidyn and gofakes3 served by the suite's own process.
# CRASH_FLAGS passes more flags (e.g. -only REGEXP, -task=false, -keep).
# soak: N randomized runs (random fault points and random-delay kills), each
# with its own keel dev data dir and publication server, PARALLEL at once.
N ?= 100
PARALLEL ?= 3
STORE ?= sqlite
CRASH_FLAGS ?=

# soak-dynamo: the soak on the DynamoDB store and S3 artifacts served by
# moto (python3 with moto[server] 5; internal/proof/awslocal's launcher, every
# request serialized), started by the suite on a loopback port and stopped
# at the end, also on failure or Ctrl-C. N (default 30) runs, PARALLEL at
# once; KILL_MS the random kills' delay after keel dev serves (MIN:MAX ms);
# CONTRACT the destination's (lookup: answers lookups, ignores keys;
# idempotent: honours keys, no lookup; none: promises nothing; full; mixed);
# LEASE keel dev's lease settings (short: 2s budget and 1s TTL; default:
# keel dev's own, 60s and 30s, so a killed run waits up to 90s). Issue 34's
# soak is each CONTRACT of lookup, idempotent and none at each LEASE.
# `make soak` takes KILL_MS, CONTRACT and LEASE too (defaults 0:200, mixed,
# and keel dev's own leases on SQLite).
MOTO_PYTHON ?= python3
SOAK_FLAGS = $(if $(KILL_MS),-kill-ms $(KILL_MS)) $(if $(CONTRACT),-contract $(CONTRACT)) $(if $(LEASE),-lease $(LEASE))

# sim: the simulator (issue 40): seeded random interleavings of every
# channel (create with and without keys, decide via the API, a one-time
# link and MCP, raise and stop, settle, cancel, input under each policy,
# fork, restarts, restarts on another build of the agent — compatible or
# not, then keel resolve --old-version|--deny — and runs whose sub-agent
# calls start child runs) over a pool of runs, with SIGKILLs of keel dev
# at random moments, racing decisions and at fault points; safety after
# every step, liveness (each waiting run's named next command, executed,
# is accepted and moves the run; a parent's is its child's) at every
# quiesce. ACTIONS steps and KILLS kills at
# least (defaults: the long run, 20000 and 1000); SEED (0: the clock);
# STORE=dynamo runs it on moto (every request serialized) with LEASE
# short (default there) or default; on sqlite LEASE defaults to keel dev's
# own. A failing simulation prints its script; replay it with
# `bin/crash -keel bin/keel -pubserver bin/pubserver -replay FILE sim`.
# `make test` plays a short one (TestSimulator).
ACTIONS ?= 20000
KILLS ?= 1000
SEED ?= 0
SIM_STORE_FLAGS = $(if $(filter dynamo,$(STORE)),-store dynamo -moto $(MOTO_PYTHON),-store $(STORE))

.PHONY: crash soak soak-dynamo crash-bins sim
crash-bins: test-bins
	$(GO) build -o $(BIN)/crash ./internal/cmd/crash

crash: crash-bins
	$(BIN)/crash -keel $(BIN)/keel -pubserver $(BIN)/pubserver -parallel $(PARALLEL) -store $(STORE) $(CRASH_FLAGS) matrix

soak: crash-bins
	$(BIN)/crash -keel $(BIN)/keel -pubserver $(BIN)/pubserver -parallel $(PARALLEL) -n $(N) -store $(STORE) $(SOAK_FLAGS) $(CRASH_FLAGS) soak

soak-dynamo: crash-bins
	$(BIN)/crash -keel $(BIN)/keel -pubserver $(BIN)/pubserver -parallel $(PARALLEL) -n $(call CLI_N,30) -store dynamo \
		-moto $(MOTO_PYTHON) -kill-ms $(or $(KILL_MS),15:250) -contract $(or $(CONTRACT),mixed) -lease $(or $(LEASE),short) $(CRASH_FLAGS) soak

sim: crash-bins
	$(BIN)/crash -keel $(BIN)/keel -pubserver $(BIN)/pubserver $(SIM_STORE_FLAGS) $(if $(LEASE),-lease $(LEASE)) \
		-seed $(SEED) -actions $(ACTIONS) -kills $(KILLS) $(CRASH_FLAGS) sim

# crashtest: `keel crashtest` on both examples at every hit of every fault
# point (make test plays each point's first hit): the research agent of the
# stock program with its publication server, and the triage program with
# its ticket service.
.PHONY: crashtest
crashtest: test-bins
	$(TESTBIN_ENV) $(GO) test -count=1 -run 'TestCrashtestResearch$$' ./internal/cli -args -crashtest.all-hits
	cd examples/triage && $(GO) test -count=1 -run 'TestCrashtest$$' . -args -crashtest.all-hits

# test-examples: the examples that are Go modules of their own (they may
# use only Keel's public API: the compiler forbids them internal/) build,
# vet and pass their tests.
.PHONY: test-examples
test-examples:
	@for d in $$(dirname $$(ls examples/*/go.mod 2>/dev/null) 2>/dev/null); do \
		echo "test-examples: $$d"; \
		(cd $$d && $(GO) vet ./... && $(GO) test -count=1 ./...) || exit 1; done

# test-viewer: the web run viewer (internal/observe/viewer) in a real browser:
# Debian's chromium (installed with apt-get when missing) driven by
# playwright-core (pinned by internal/observe/viewer/e2e/package-lock.json) against
# a keel dev built from this checkout. The viewer's assets are plain files
# embedded as they are (no build step). Screenshots: internal/observe/viewer/e2e/out/.
VIEWER_E2E := internal/observe/viewer/e2e
VIEWER_PW := $(VIEWER_E2E)/node_modules/playwright-core/package.json
CHROMIUM ?= /usr/bin/chromium

$(VIEWER_PW): $(VIEWER_E2E)/package.json $(VIEWER_E2E)/package-lock.json
	cd $(VIEWER_E2E) && npm ci --no-audit --no-fund --prefer-offline
	@touch $@

.PHONY: test-viewer
test-viewer: $(VIEWER_PW) test-bins
	@if [ ! -x $(CHROMIUM) ]; then \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			echo "test-viewer: installing Debian's chromium"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
				{ echo "test-viewer: apt-get install chromium failed"; exit 1; }; \
		else echo "test-viewer: SKIPPED: no $(CHROMIUM), and apt-get cannot install it here (no apt-get, or not root)"; exit 0; fi; \
	fi; \
	cd $(VIEWER_E2E) && KEEL_BIN=$(BIN)/keel CHROMIUM=$(CHROMIUM) node --test --test-concurrency=1
