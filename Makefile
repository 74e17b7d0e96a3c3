# sudoku-fcgi. `make help` lists the targets; `make up` runs the service and
# `make test` runs everything CI runs.
SHELL := /bin/bash
.DEFAULT_GOAL := help
GO ?= go
# docker compose (v2) where present, else docker-compose (v1).
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)

# Version stamping.
# The version is the newest tag (v1.2.3 -> 1.2.3), else the newest released
# version in CHANGELOG.md; the revision is the commit, "-dirty" with local
# changes. `make build` links them in; the images get them as build args.
CHANGELOG_VERSION := $(shell sed -n 's/^## \[\([0-9][^]]*\)\].*/\1/p' CHANGELOG.md 2>/dev/null | head -1)
VERSION ?= $(or $(patsubst v%,%,$(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)),$(CHANGELOG_VERSION),dev)
REVISION ?= $(or $(shell git describe --always --dirty --abbrev=12 --match 'no tag has this name' 2>/dev/null),unknown)
# The branch, and the commit's date as the build date (reproducible builds).
BRANCH ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null)
BUILD_DATE ?= $(shell git log -1 --format=%cd --date=format:%Y%m%d-%H:%M:%S 2>/dev/null)
VERSION_PKG := github.com/prometheus/common/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION) -X $(VERSION_PKG).Branch=$(BRANCH) -X $(VERSION_PKG).BuildDate=$(BUILD_DATE)
# docker-compose.yml passes these to the Dockerfiles (build.args).
export SUDOKU_VERSION := $(VERSION)
export SUDOKU_REVISION := $(REVISION)
export SUDOKU_BRANCH := $(BRANCH)
export SUDOKU_BUILD_DATE := $(BUILD_DATE)

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^# ---- / {sub(/^# ---- /, ""); sub(/ ----$$/, ""); printf "\n%s:\n", $$0} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-20s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# ---- build ----
.PHONY: build version
build: ## build every command into bin/, stamped with VERSION and REVISION
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

version: ## print the version, revision, branch and date a build would stamp
	@echo "$(VERSION) $(REVISION) $(BRANCH) $(BUILD_DATE)"

# ---- lint ----
# staticcheck from PATH or GOPATH/bin (where .ci/run installs it), else
# `go run` of the pinned version (needs the module proxy once).
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK ?= $(or $(shell command -v staticcheck 2>/dev/null),$(wildcard $(shell $(GO) env GOPATH 2>/dev/null)/bin/staticcheck),$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION))
SHELL_SCRIPTS = $(shell find . -name '*.sh' -not -path './.git/*' -not -path './out/*' | sort) .ci/run .ci/check-files .ci/pin-digests
.PHONY: lint check-files fmt-check vet staticcheck shellcheck check-rules
lint: check-files fmt-check vet staticcheck shellcheck check-rules ## tracked-file check, gofmt check, go vet, staticcheck, shellcheck, promtool (part of make test)

check-files: ## fail on a tracked binary (ELF, or exec bits without #!) or a file over 1 MB outside testdata/
	.ci/check-files

fmt-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l .); if [[ -n $$out ]]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

staticcheck: ## staticcheck (STATICCHECK_VERSION, installed by .ci/run)
	$(STATICCHECK) ./...

check-rules: ## promtool: the Prometheus config and rules check, and the rules' unit tests pass; every alert has a description and a runbook_url that resolves (tests/monitoring)
	@command -v promtool >/dev/null || { echo "promtool not installed (Debian: apt-get install prometheus)"; exit 1; }
	promtool check config docker/prometheus/prometheus.yml docker/prometheus/prometheus-swarm.yml docker/prometheus/prometheus-k8s.yml
	cd docker/prometheus && promtool test rules rules_test.yml
	$(GO) test -count=1 ./tests/monitoring

shellcheck: ## shellcheck on every shell script
	@command -v shellcheck >/dev/null || { echo "shellcheck not installed (Debian: apt-get install shellcheck)"; exit 1; }
	shellcheck $(SHELL_SCRIPTS)

# ---- tests ----
# PKG narrows the unit tests, e.g. make unit PKG=./fcgi/...
PKG ?= ./...
FUZZTIME ?= 30s
.PHONY: test unit fuzz nginx-test integration test-browser test-tls test-scale test-swarm test-swarm-cluster test-k8s test-reliability bench-reliability bench-overload soak
test: lint unit bench-smoke nginx-test integration test-browser test-tls test-scale test-swarm test-swarm-cluster test-reliability ## everything CI runs, in this order

unit: ## unit tests with the race detector, shuffled (PKG, default ./...), then the solver built with the purego tag (scalar engine only)
	$(GO) test -race -shuffle=on $(PKG)
	$(GO) test -race -shuffle=on -tags purego ./solver

fuzz: ## every Fuzz target in PKG for FUZZTIME each (30s)
	@set -e; for pkg in $$($(GO) list $(PKG)); do \
		for f in $$($(GO) test -list '^Fuzz' "$$pkg" | grep '^Fuzz' || true); do \
			echo "fuzz: $$pkg $$f"; \
			$(GO) test "$$pkg" -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME); \
		done; \
	done

# The end-to-end suites bring up their own compose projects on loopback
# ports, so they never meet the stack of `make up` (nor each other's names).
IT_PROJECT ?= $(or $(SUDOKU_IT_PROJECT),sudoku-it)
nginx-test: ## nginx -t with the project's config in the nginx image, its includes rendered by sudoku-edge -render-only; the image's CA bundle is there
	$(COMPOSE) -p $(IT_PROJECT) build nginx
	$(COMPOSE) -p $(IT_PROJECT) run --rm --no-deps -T --entrypoint bash nginx -c \
		'sudoku-edge -render-only /run/sudoku-edge -workers 127.0.0.1:9 -log-level warn && nginx -t && test -s /etc/ssl/certs/ca-certificates.crt && echo "CA bundle: /etc/ssl/certs/ca-certificates.crt"'
	$(COMPOSE) -p $(IT_PROJECT) down -v --remove-orphans

integration: ## curl suite against a fresh compose stack (tests/integration/run.sh)
	tests/integration/run.sh

test-browser: ## the web page in headless Chromium against its own stack (tests/browser/run.sh; SUDOKU_BROWSER_UPDATE=1 rewrites the screenshot)
	tests/browser/run.sh

test-tls: ## TLS end to end with Pebble: certificate over HTTP-01, renewal under load (tests/tls/run.sh)
	tests/tls/run.sh

test-scale: ## scaling end to end: workers 2 -> 3 and back under load (tests/scale/run.sh)
	tests/scale/run.sh

test-swarm: ## Docker Swarm end to end: a single-node swarm if none, stack sudoku-swarm-test (ports 28480-28482), 3 -> 5 -> 2 replicas and a rolling restart under load (tests/swarm/run.sh)
	timeout 900 tests/swarm/run.sh

test-swarm-cluster: ## a three-node Swarm of Docker engines in containers: workers spread, 2 edges on 2 nodes, per-client budgets, then under load a node cut off, a rolling update, a worker node and an edge node killed (tests/swarm/cluster.sh, docker/README.md)
	timeout 900 tests/swarm/cluster.sh

test-k8s: ## the Kubernetes base (docker/k8s) and its monitoring (docker/k8s/monitoring) rendered, decoded strictly into the API types, invariants checked; no cluster (also in make unit)
	$(GO) test -count=1 ./tests/k8s

# RELIABILITY_FLAGS passes flags to the runner, e.g. '-run overload -keep'.
RELIABILITY_FLAGS ?=
test-reliability: ## every reliability scenario on a fresh stack, judged on what holds on any machine (tests/reliability/README.md; part of make test)
	$(GO) run ./tests/reliability $(RELIABILITY_FLAGS)

bench-reliability: ## every reliability scenario, with the bounds that depend on the machine's speed judged and tabled; exit 1 only on a failed criterion (tests/reliability/RESULTS.md)
	$(GO) run ./tests/reliability -bench $(RELIABILITY_FLAGS)

bench-overload: ## the overload's bound on a fresh stack: CPU per answer and per rejection (cgroups), (1 - k r) / (1 - r) and the goodput at k = 2, 3 (tests/bench/RESULTS.md)
	$(GO) run ./tests/reliability -bench-overload $(RELIABILITY_FLAGS)

soak: ## 10 minutes at 0.5 C: RSS growth and errors (not in make test)
	$(GO) run ./tests/reliability -soak $(RELIABILITY_FLAGS)

# ---- the stack (docker compose) ----
# No -p: compose's default project name (the checkout's directory) is the one
# plain `docker compose ...` and `docker-compose ...` in the checkout use, so
# they find the same containers. N is the worker count for make scale, S a service for logs/sh.
N ?= 2
S ?=
HTTP_PORT = $(lastword $(subst :, ,$(or $(SUDOKU_HTTP_PORT),8080)))
EXAMPLE_PUZZLE := 000000010400000000020000000000050407008000300001090000300400200050100000000806000
.PHONY: seed-images images up down clean clean-stack ps logs scale sh load-smoke
seed-images: ## build local base images where no registry answers (docker/seed-images.sh)
	docker/seed-images.sh

# The first build downloads Debian packages and Go modules and compiles the
# binaries (README, "Quick start"): each line says how long it has run, and
# a line every 30 s shows a long step is still going.
images: seed-images ## build the stack's images (COMPOSE_PROFILES=monitoring: Prometheus's and Alertmanager's too), with the seconds elapsed on every line
	@echo "building the images; the first build takes minutes (README, Quick start), later ones reuse the cache"; \
	start=$$SECONDS; \
	(while sleep 30; do printf '[%4ds] ... still building\n' $$((SECONDS - start)); done) & beat=$$!; \
	set -o pipefail; \
	$(COMPOSE) build 2>&1 | while IFS= read -r line; do printf '[%4ds] %s\n' $$((SECONDS - start)) "$$line"; done; \
	status=$$?; kill $$beat; \
	if [[ $$status == 0 ]]; then echo "images built in $$((SECONDS - start)) s"; fi; exit $$status

up: images ## build and start the stack on :8080, then print a curl to try
	$(COMPOSE) up -d
	@echo "waiting for http://127.0.0.1:$(HTTP_PORT)/sudoku"; \
	for i in $$(seq 90); do \
		if curl -fs -o /dev/null "http://127.0.0.1:$(HTTP_PORT)/sudoku/stats"; then \
			echo "up. Try:"; \
			echo "  curl 'http://127.0.0.1:$(HTTP_PORT)/sudoku?puzzle=$(EXAMPLE_PUZZLE)'"; \
			exit 0; \
		fi; \
		sleep 1; \
	done; echo "not answering after 90s: see make logs"; exit 1

down: ## stop the stack and remove its containers; named volumes (certificates) stay
	$(COMPOSE) down --remove-orphans

clean: clean-stack ## remove the stack with its volumes (the edge's certificates too), bin/ and out/
	rm -rf bin/ out/

# The stack part of make clean on its own: tests/integration/run.sh runs it
# against its own project and leaves bin/ and out/ alone.
clean-stack: ## remove the stack's containers and volumes, the edge's certificates too (part of make clean)
	@echo "clean: removing the stack's containers and volumes, including edge-data (ACME account and certificates)"
	$(COMPOSE) down -v --remove-orphans

ps: ## the stack's containers and their health
	$(COMPOSE) ps

logs: ## follow the stack's logs (S=nginx for one service)
	$(COMPOSE) logs -f --tail=50 $(S)

scale: ## run N workers (make scale N=4); sudoku-edge picks them up
	$(COMPOSE) up -d --no-recreate --scale sudoku=$(N)

# CMD runs a command instead of the shell: make sh S=nginx CMD='cat /run/sudoku-edge/servers.conf'.
CMD ?= bash
sh: ## a shell in a service's container (make sh S=nginx), or CMD in it
	$(COMPOSE) exec $(or $(S),nginx) $(CMD)

LOAD_URL ?= http://127.0.0.1:$(HTTP_PORT)
LOAD_IN ?= tests/integration/testdata/puzzles.txt
# 40/s stays within nginx's per-client limit (100 r/s).
load-smoke: ## 5 s of open-loop load on LOAD_URL (the stack of make up) at 40/s with progress
	$(GO) run ./cmd/sudoku-load load -url $(LOAD_URL) -in $(LOAD_IN) -rate 40 -duration 5s -log-console

# ---- release ----
# PIN_IMAGES: NAME=REF words for sudoku-fcgi, sudoku-edge, sudoku-exporter, each
# REF an image pushed to the registry the manifests pull from (or REPO@sha256:...).
PIN_DIR ?= docker
PIN_IMAGES ?=
.PHONY: pin-digests
pin-digests: ## write the pushed images' digests into docker/stack.yml and docker/k8s/kustomization.yaml (PIN_IMAGES="sudoku-fcgi=reg/sudoku-fcgi:1.2.3 ...", PIN_DIR)
	.ci/pin-digests $(PIN_DIR) $(PIN_IMAGES)

# ---- benchmarks (figures: tests/bench/RESULTS.md, solver/RESULTS.md, tests/bench/herd/RESULTS.md) ----
# Only what a RESULTS file or a README cites. Host benchmarks need Debian's
# nginx; bench-accept and CLIENT=wrk need wrk.
COUNT ?= 6
BENCHTIME ?= 1s
HERD_OUT ?= out/herd
HERD_SVG ?= tests/bench/herd/herd.svg
.PHONY: bench bench-smoke solver-bench bench-worker bench-path bench-path-compose bench-accept bench-access-log capacity-plan herd herd-nginx
bench: solver-bench bench-worker ## the Go benchmarks (no external tools)

# Each host benchmark once with tiny sizes, so a target that cannot run
# fails CI (figures meaningless; out/bench-smoke). bench-path-compose and
# bench-overload build and start the compose stack, which the end-to-end
# suites already do: bench-path-compose's own part is path.sh's, run here by
# bench-path, and bench-overload's is the reliability suite's.
SMOKE_OUT ?= out/bench-smoke
bench-smoke: ## start every host benchmark target briefly with tiny sizes (part of make test; not the compose ones)
	rm -rf $(SMOKE_OUT) && mkdir -p $(SMOKE_OUT)
	$(MAKE) solver-bench COUNT=1 SAMPLE=2 BENCHTIME=1x OUT=$(CURDIR)/$(SMOKE_OUT)/solver
	$(MAKE) bench-worker COUNT=1 BENCHTIME=1x
	$(MAKE) bench-path N=200 ROUNDS=1 DEPTHS=4 OUT=$(CURDIR)/$(SMOKE_OUT)/path
	$(MAKE) bench-accept DURATION=1s CLIENTS=8
	$(MAKE) bench-access-log DURATION=1s RATE=200
	$(MAKE) capacity-plan STEP=1s SUDOKU_LOAD_STEPS=2 OUT=$(CURDIR)/$(SMOKE_OUT)/capacity
	$(MAKE) herd HERD_REQUESTS=2000 HERD_SWEEP= HERD_OUT=$(SMOKE_OUT)/herd HERD_SVG=$(SMOKE_OUT)/herd/herd.svg
	$(MAKE) herd-nginx DURATION=1s ROUNDS=1 RATE=200

solver-bench: ## solver: CPU time, guesses and callgrind instructions per puzzle per set at limit 1 and 2 (COUNT=10 SAMPLE=200, OUT=dir keeps raw output)
	GO=$(GO) solver/bench.sh

bench-worker: ## handler and FastCGI round-trip benchmarks, -benchmem (COUNT)
	$(GO) test ./fcgi -run '^$$' -bench . -benchmem -count $(COUNT) -benchtime $(BENCHTIME)

bench-path: ## the request path at 32 and 480 in flight on host nginx + 2 workers, unix sockets and TCP (tests/bench/path.sh; CLIENT=wrk drives it with wrk)
	tests/bench/path.sh

bench-path-compose: ## bench-path against the compose stack, through its published port and straight to nginx (project sudoku-path, port 31780)
	COMPOSE=1 tests/bench/path.sh

bench-accept: ## accept_mutex on/off/reuseport on host nginx with wrk (tests/bench/accept-mutex.sh)
	tests/bench/accept-mutex.sh

bench-access-log: ## sudoku-edge's CPU per request for counting nginx's answers: off, status 400 and up, every answer; 200s and nginx's 503s (tests/bench/access-log.sh)
	tests/bench/access-log.sh

capacity-plan: ## capacity at p99 <= 5 ms on easy and hard puzzles on host nginx + 2 workers, with the plan for PEAK (100000) req/s (tests/bench/capacity-plan.sh)
	tests/bench/capacity-plan.sh

herd: ## balancer simulation: the plot tests/bench/herd/herd.svg and the full tables in out/herd/table.md (tests/bench/herd/RESULTS.md)
	mkdir -p $(HERD_OUT)
	$(GO) run ./tests/bench/herd -svg $(HERD_SVG) > $(HERD_OUT)/table.md

herd-nginx: ## nginx's own balancing policies on host processes (127.0.0.1:31480-31541; tests/bench/herd/nginx.sh)
	tests/bench/herd/nginx.sh
