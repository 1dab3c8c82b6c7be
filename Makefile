# hermes units — make help lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin
STATE ?= $(CURDIR)/.run/state
PKGS := ./...
CHAOS_ROUNDS ?= 200
CHAOS_SEED ?= 0
ESCAPE_RUNS ?= 200
FORKING_RUNS ?= 100
ESCAPE_PARALLEL ?= 8
FORKING_PARALLEL ?= 4
ESCAPE_FOR ?= 0
FORKING_FOR ?= 0
BENCH_FLAGS ?=

.PHONY: help build run test lint lint-metrics bench bench-peers clean schema chaos escapes examples man dist

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

# hermesctl is linked statically (CGO_ENABLED=0), as make dist links it: a
# dynamic one has the loader map and relocate libc at every start (~60 of
# its ~600 page faults), and every command is a start.
build: ## build hermesd and hermesctl (static, as make dist builds it) into bin/
	$(GO) build -o $(BIN)/ ./cmd/hermesd
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/hermesctl

run: build ## build, then start hermesd in the foreground on examples/
	@mkdir -p $(STATE) && chmod 0700 $(STATE)
	@echo "hermesd: units examples/units, state $(STATE)"
	@echo "in another shell:  export HERMES_SOCKET=$(STATE)/hermesd.sock; $(BIN)/hermesctl status"
	exec $(BIN)/hermesd --config examples/hermes.yaml --units examples/units --state $(STATE) --socket $(STATE)/hermesd.sock

test: ## run every test with the race detector (and examples/kubernetes, a module of its own)
	$(GO) test -race -count=1 -timeout 25m $(PKGS)
	cd examples/kubernetes && $(GO) test -race -count=1 ./...

lint: ## gofmt, go mod tidy, go vet, staticcheck, shellcheck, complexity ≤ 25, the detached-spawn ratchet and bodies ≤ 100 lines
	$(GO) mod tidy -diff
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	shellcheck -s sh $$(git ls-files '*.sh')
	@# Each file once (a directory would be walked again under its parent); -ignore is a regexp on the path.
	$(GO) tool gocyclo -over 25 -ignore '_test\.go$$' $$(git ls-files '*.go')
	$(GO) run ./tools/spawncheck .
	cd examples/kubernetes && $(GO) mod tidy -diff && $(GO) vet ./...

cross: ## go vet and go test -c of every package for darwin/arm64, darwin/amd64 and freebsd/amd64 (TARGETS="darwin/arm64" for some)
	.ci/cross

lint-metrics: ## promtool check metrics on a scrape of every series and of a live hermesd (Debian package prometheus)
	HERMES_REQUIRE_PROMTOOL=1 $(GO) test -count=1 -run 'TestMetricsFromEvents|TestExitAndJobSeries|TestEventsAndMetricsScenario|TestDashboardQueries' ./internal/metrics ./cmd/hermesd

bench: build ## measure the targets; prints a table (figure, value, method, machine); BENCH_FLAGS="-owner-trials 20" for a quicker run (a max, not a p99), "-only hermesd,owner" for some sections, "-only scale -sizes 10,100" for the scale table at some sizes, "-only storm -sizes 1000,5000" for status and memory in a reload storm during a start
	$(GO) run ./tools/bench $(BENCH_FLAGS)

bench-peers: ## not in CI: start, stop, status, edit, memory and owner-SIGKILL against process-compose, supervisord and pm2 where on PATH and the floor, interleaved, with ratios; BENCH_FLAGS="-sizes 10,100,1000,5000 -peer-rounds 3" (tools/bench/build-process-compose.sh builds process-compose)
	$(GO) run ./tools/bench -peers $(BENCH_FLAGS)

chaos: ## kill hermesd at random moments, restart it, check nothing owned survives or is lost (CHAOS_ROUNDS, CHAOS_SEED; 0 = from the clock)
	$(GO) run ./tools/chaos -rounds $(CHAOS_ROUNDS) -seed $(CHAOS_SEED)

# make escapes: the plays run ESCAPE_PARALLEL (FORKING_PARALLEL) at once, each
# with owners, directories, ports and tokens of its own; without the race
# detector, which slows each owner and supervisor 2-3x (make test runs both
# tests with it); ESCAPE_FOR and FORKING_FOR (e.g. 30m) stop starting plays
# after that long, and each test prints its table (runs per row); an early
# escape row plays on until ESCAPE_RUNS plays were killed within 50 ms of the
# birth (at most twice as many plays).
escapes: ## play each escape row ESCAPE_RUNS times, each forking-together size FORKING_RUNS times (issue 24's bar: 200, 100)
	set -o pipefail; $(GO) test -count=1 -timeout 0 -v -run 'TestEscapes' ./supervisor -escapes.runs $(ESCAPE_RUNS) -escapes.parallel $(ESCAPE_PARALLEL) -escapes.for $(ESCAPE_FOR) -escapes.quick | grep -vE '^ *(=== (RUN|PAUSE|CONT|NAME)|--- PASS)'
	set -o pipefail; $(GO) test -count=1 -timeout 0 -v -run 'TestForkingTogether' ./cmd/hermesd -forking.runs $(FORKING_RUNS) -forking.parallel $(FORKING_PARALLEL) -forking.for $(FORKING_FOR) | grep -vE '^ *(=== (RUN|PAUSE|CONT|NAME)|--- PASS)'

schema: ## regenerate schema/*.schema.json and docs/reference.md from the units decoder's key tables
	$(GO) generate ./schema

examples: ## regenerate examples/launchd with hermesctl export launchd (TestLaunchdExampleIsGenerated fails when it drifts)
	$(GO) test -count=1 -run '^TestLaunchdExampleIsGenerated$$' ./cmd/hermesctl -update

man: ## regenerate docs/man (hermesctl's man pages) from the command tree (TestManPages fails when they drift)
	$(GO) test -count=1 -run '^TestManPages$$' ./cmd/hermesctl -update

dist: ## static (CGO_ENABLED=0) binaries for linux and darwin on amd64 and arm64, tarballs and SHA256SUMS in dist/, checked (VERSION=v1.2.3)
	.ci/dist

clean: ## remove build output and the run state
	rm -rf $(BIN) .run dist
