# toolhost — build, run, test and measure.
#
#   make run    build, then serve the HTTP API on 127.0.0.1:8080 with the sample
#               groups loaded for tenant "default" (its token is printed)
#   make test   gofmt, go vet, every test, and a short fuzz run of each parser
#   make bench  the benchmarks, with their figures
#   make fuzz   a longer fuzz run (FUZZTIME=1m per target by default)
#   make race   every test under the race detector, toolhost processes included
#   make soak   1,000 hostile and normal calls through a server, then a check
#               that nothing is left behind (about 10 minutes)

GO       ?= go
# SQLite's FTS5 (knowledge search) is a build tag of mattn/go-sqlite3.
export GOFLAGS := $(GOFLAGS) -tags=sqlite_fts5
BIN      := bin/toolhost
# The sandbox's helper and the plugin process, built beside bin/toolhost.
HELPERS  := ./pyhost/cmd/toolhost-sandbox ./pyhost/cmd/toolhost-pyhost ./pyhost/cmd/toolhost-cpython
SAMPLES  := $(sort $(wildcard sample_groups/*/*.yaml))
# The sample tool groups (kind: Plugin); the other samples are agents.
SAMPLE_GROUPS := $(shell grep -l '^kind: *Plugin *$$' $(SAMPLES))
SAMPLE_AGENTS := $(filter-out $(SAMPLE_GROUPS),$(SAMPLES))
FUZZTIME ?= 1m

# Fuzz targets: package and function, one per parser of outside input.
FUZZ_TARGETS := ./core/typeexpr:FuzzParse ./core/definition:FuzzLoad ./core/arguments:FuzzCheck ./core/schema:FuzzAppendString ./plugins/frame:FuzzRead ./core/definition:FuzzLoadAgent ./core/templates:FuzzRender ./core/blocks:FuzzParseMarkdown ./core/relpath:FuzzCheck ./core/cli:FuzzParseSessionLine ./core/cli:FuzzParseSecretFlag ./core/requirements:FuzzParse ./core/strictjson:FuzzDecode ./core/mcpserver:FuzzQueryVars ./pyhost/gpython:FuzzRefusals ./pyhost/gpython:FuzzRewriteModulo ./core/pipeline:FuzzRedactJSON ./core/pipeline:FuzzPointer ./core/geoip:FuzzFill

# No PostgreSQL server of storage/pgtest may outlive its tests. Each runs
# from a folder named toolhost-pgtest-RUN-*, which is on its command line;
# RUN is this make's own tag, so that another run's servers on the machine
# do not count. A server killed with its test process may take a moment.
ifndef TOOLHOST_PGTEST_RUN
TOOLHOST_PGTEST_RUN := $(shell od -An -N4 -tx4 /dev/urandom | tr -d ' \n')
endif
export TOOLHOST_PGTEST_RUN
PG_LEFTOVERS = for i in 1 2 3 4 5 6; do pgrep -f '[t]oolhost-pgtest-$(TOOLHOST_PGTEST_RUN)-' >/dev/null || exit 0; sleep 0.5; done; \
	echo "make: PostgreSQL servers of the tests (storage/pgtest) are still running:"; pgrep -af '[t]oolhost-pgtest-$(TOOLHOST_PGTEST_RUN)-'; exit 1

.PHONY: all build run schemas test lint unit rootless soak soak-short fuzz fuzz-short race bench tools tools-run screenshots clean

all: build

# The toolhost binary and, beside it, the sandbox's helper (its launcher and
# init, linked without the rest of toolhost: see docs/decisions.md) and the
# plugin process's (toolhost-pyhost: the plugin process alone, which starts
# faster on every cold start; toolhost-cpython: the same without gpython,
# for cpython groups). The helpers are linked statically
# (CGO_ENABLED=0: they need no C): no dynamic loader and no libc to map at
# each of their starts, two of them per sandbox (about 2 ms of CPU each
# here, where a page fault costs some 30 µs).
# A cold build (no bin/toolhost yet) says it may take minutes: cgo compiles
# SQLite, and every dependency is compiled once.
build:
	@test -x $(BIN) || echo "make: building bin/toolhost for the first time: cgo compiles SQLite and every dependency is compiled once, which may take a few minutes"
	$(GO) build -o bin/ ./core/cmd/toolhost
	CGO_ENABLED=0 $(GO) build -o bin/ $(HELPERS)

# The main job: the server on its defaults (SQLite under ./data) with the
# sample groups imported. ADDR and DATA override the defaults.
ADDR ?= 127.0.0.1:8080
DATA ?= ./data
run: build tools-run
	@for g in $(SAMPLES); do $(BIN) validate $$g || exit 1; done
	$(BIN) serve --data $(DATA) --addr $(ADDR) --load sample_groups

# What the server needs at run time besides Go: slirp4netns, the sandbox's
# network under --network allow (without it, tool code has no network).
tools-run:
	@command -v slirp4netns >/dev/null || { echo "make: installing slirp4netns (the sandbox's network)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slirp4netns) >/dev/null || echo "make: could not install slirp4netns; tool code will have no network"; }

# Check and print the schemas of the sample groups, and check the sample
# agents against them, without a server.
schemas: build
	@set -e; for g in $(SAMPLE_GROUPS); do \
		echo "== $$g"; \
		$(BIN) validate $$g; \
		$(BIN) schema --dialect openai $$g; \
	done; \
	for a in $(SAMPLE_AGENTS); do \
		echo "== $$a"; \
		$(BIN) validate $$a; \
	done

test: tools lint unit rootless soak-short fuzz-short

# What the tests need besides Go: python3 with Pydantic v2 (the oracle of
# the schema test). The machine image ships it; PyPI is not reachable, so
# it cannot be installed here. Chromium, for the console's browser tests
# (Debian's chromium package, installed when missing). And node with npm,
# for the MCP client on the TypeScript SDK (its packages come from npm,
# pinned by its lock). And PostgreSQL's server binaries (initdb, postgres),
# for the tests of the PostgreSQL storage: storage/pgtest runs a private
# server of its own in a temporary folder. Debian's server packages
# (postgresql, and postgresql-15 under it) create a system cluster on
# install and start it: a drop-in of postgresql-common's createcluster.conf
# turns that off first, and any system cluster still running afterwards is
# stopped, so the install leaves no server running.
PG_FOUND := command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
tools:
	@command -v python3 >/dev/null || { echo "make: python3 is needed; installing it"; apt-get update && apt-get install -y python3; }
	@command -v slirp4netns >/dev/null || { echo "make: slirp4netns gives sandboxes their network under --network allow; installing it"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slirp4netns) >/dev/null || { echo "make: could not install slirp4netns"; exit 1; }; }
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null || { \
		echo "make: the console's browser tests (core/console) need Chromium; installing Debian's chromium package"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null || { echo "make: could not install chromium"; exit 1; }; }
	@python3 -c 'import pydantic, sys; sys.exit(0 if pydantic.VERSION.startswith("2.") else 1)' || \
		{ echo "make: the schema tests need Pydantic v2 for python3 (found none)"; exit 1; }
	@test -d core/mcpserver/testdata/tsclient/node_modules || { command -v npm >/dev/null || { echo "make: the TypeScript MCP client test (TestMCPTypeScriptClient) needs node and npm"; exit 1; }; \
		echo "make: installing the TypeScript MCP client's npm packages (core/mcpserver/testdata/tsclient)"; \
		npm ci --prefix core/mcpserver/testdata/tsclient --no-audit --no-fund >/dev/null || { echo "make: npm ci in core/mcpserver/testdata/tsclient failed"; exit 1; }; }
	@$(PG_FOUND) || { echo "make: the PostgreSQL storage's tests (storage/pgtest) need PostgreSQL's server binaries; installing Debian's postgresql package (its system cluster neither created nor started)"; \
		mkdir -p /etc/postgresql-common/createcluster.d && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/toolhost-no-main-cluster.conf; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null || { echo "make: could not install postgresql"; exit 1; }; \
		pg_lsclusters -h 2>/dev/null | while read -r ver name port status rest; do \
			case $$status in online*) pg_ctlcluster $$ver $$name stop || true;; esac; done; \
		$(PG_FOUND) || { echo "make: postgresql is installed but initdb is not found"; exit 1; }; }

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The packages whose tests take longest come first: go test starts
# packages in the order they are listed (two at a time on a 2-core
# machine), and a long one started last would run on alone at the end.
SLOW_TEST_PKGS := ./core/cmd/toolhost ./core/runner ./core/api
unit:
	$(GO) test -count=1 -timeout 20m $(SLOW_TEST_PKGS) ./...
	@$(PG_LEFTOVERS)

# The sandbox's hostile tests a second time, as an ordinary user (created
# here when missing): toolhost then builds its sandboxes rootless, from
# unprivileged user namespaces, as on a developer's laptop. The doors
# (serve, call, session, validate with requirements) and the runner's
# attacks on the minimal world, the network, the worker protocol, gpython
# and pip's sandbox. The user has no Go toolchain: the binaries and test
# binaries are built here, and the tests run from a copy of their data.
# slirp4netns, run by an ordinary user, opens /dev/net/tun: udev makes it
# open to every user (0666) on desktop and server distributions, and it is
# made so here when a machine image left it to root alone. Run by an
# ordinary user, make unit ran everything rootless already.
ROOTLESS_USER ?= toolhost-rootless
ROOTLESS_CMD_TESTS := ^(TestDoctorAndBench|TestMCPStdioGroup|TestHostileServer|TestHostileCallCommand|TestHostileSessionCommand|TestValidateRefusesHostileRequirements|TestServerRefusesHostileRequirements|TestCallContract)$$
ROOTLESS_RUNNER_TESTS := ^(TestMinimalWorld|TestProbeWithLateSlirpReady|TestGroupCodeAfterTheRoutes|TestUnreachableRoutesEveryStart|TestWorkersCannotReplaceThePluginSocket|TestHostileToolsAreContained|TestHeldAnswerPipeAfterTimeout|TestLeftoverSurvivesAKilledWorker|TestNothingStartsBetweenCalls|TestWorkersCannotReadEachOther|TestBytesAfterTheAnswer|TestDirectPath.*|TestNetworkPolicy|TestTemplateWorkersJoinTheSandboxes|TestCloneParentIsSwept|TestHostDoesNotTrustTheWorker|TestGPython.*|TestRequirementsFromWheelhouse|TestInstallRunsInItsSandbox)$$
rootless:
	@if [ "$$(id -u)" != 0 ]; then echo "make rootless: make unit ran as an ordinary user, rootless already"; exit 0; fi; \
	set -e; \
	id -u $(ROOTLESS_USER) >/dev/null 2>&1 || useradd --create-home --shell /usr/sbin/nologin $(ROOTLESS_USER); \
	if [ -c /dev/net/tun ] && [ "$$(stat -c %a /dev/net/tun)" != 666 ]; then chmod 0666 /dev/net/tun; fi; \
	dir=$$(mktemp -d /tmp/toolhost-rootless.XXXXXX); trap 'rm -rf $$dir' EXIT; chmod 0755 $$dir; \
	$(GO) build -o $$dir/bin/ ./core/cmd/toolhost; \
	CGO_ENABLED=0 $(GO) build -o $$dir/bin/ $(HELPERS); \
	$(GO) test -c -o $$dir/cmd.test ./core/cmd/toolhost; \
	$(GO) test -c -o $$dir/runner.test ./core/runner; \
	mkdir -p $$dir/tree/core/cmd/toolhost $$dir/tree/core/runner $$dir/tree/core/mcpserver/testdata; \
	cp core/mcpserver/testdata/*.yaml core/mcpserver/testdata/*.py $$dir/tree/core/mcpserver/testdata/; \
	cp -r sample_groups $$dir/tree/; \
	cp -r core/cmd/toolhost/testdata $$dir/tree/core/cmd/toolhost/; \
	cp -r core/runner/testdata $$dir/tree/core/runner/; \
	chown -R $(ROOTLESS_USER) $$dir/tree; chmod -R a+rX $$dir; \
	home=$$(getent passwd $(ROOTLESS_USER) | cut -d: -f6); \
	as_user="runuser -u $(ROOTLESS_USER) -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=$$home TOOLHOST_TEST_BIN=$$dir/bin/toolhost"; \
	echo "make rootless: the sandbox's hostile tests again, as the ordinary user $(ROOTLESS_USER)"; \
	(cd $$dir/tree/core/cmd/toolhost && $$as_user $$dir/cmd.test -test.count=1 -test.run '$(ROOTLESS_CMD_TESTS)'); \
	(cd $$dir/tree/core/runner && $$as_user $$dir/runner.test -test.count=1 -test.run '$(ROOTLESS_RUNNER_TESTS)')

# Every test with the race detector, in the test binaries and in the
# toolhost processes they start (server, plugin processes): a race there
# exits 66 and fails its test. The sandbox and template-worker limit tests
# (core/runner, core/templates) start plain toolhost processes: the race
# runtime needs far more address space and threads than those limits
# allow. About 4 minutes.
RACE_LIMIT_PKGS := ./core/runner ./core/templates
race:
	TOOLHOST_TEST_RACE=1 GORACE=halt_on_error=1 $(GO) test -race -count=1 $$($(GO) list ./... | grep -v -e /core/runner -e /core/templates)
	GORACE=halt_on_error=1 $(GO) test -race -count=1 $(RACE_LIMIT_PKGS)
	@$(PG_LEFTOVERS)

# The soak run (outside `make test`): SOAK_CALLS calls from SOAK_CLIENTS
# clients through a real server, every other one hostile (crashes,
# timeouts, memory and fork bombs, leftover threads and processes, a full
# scratch); afterwards the server's processes, descriptors, cgroups,
# stages, temporary folders and memory must be back to their starting
# levels. It prints the figures. Root is needed (cgroups, sandbox ids).
SOAK_CALLS   ?= 1000
SOAK_CLIENTS ?= 6
soak:
	TOOLHOST_SOAK=1 TOOLHOST_SOAK_CALLS=$(SOAK_CALLS) TOOLHOST_SOAK_CLIENTS=$(SOAK_CLIENTS) \
		$(GO) test -count=1 -run '^TestSoak$$' -v -timeout 30m ./core/cmd/toolhost/

# A short soak inside make test: 200 calls from 4 clients (about 40 s),
# with the same checks of what is left behind.
soak-short:
	@$(MAKE) --no-print-directory soak SOAK_CALLS=200 SOAK_CLIENTS=4

# A fixed number of inputs per target, not a duration: a duration-bound
# run can end in "context deadline exceeded" on a loaded machine.
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5000x

fuzz:
	@set -e; log=$$(mktemp); trap "rm -f $$log" EXIT; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg > $$log 2>&1 || { cat $$log; exit 1; }; \
		tail -n 1 $$log; \
	done

# Go benchmarks of the parsers and schemas, of the storage (the ledger's
# claim on SQLite and on PostgreSQL beside a SELECT 1) and of serving from
# several nodes (real servers on SQLite and on one PostgreSQL: calls/s and
# session calls), of a quiet tenant beside a noisy one on one server
# (BenchmarkNoisyNeighbour, about 75 s: p50, p99 and time to Ready against
# the targets of issue 25), of cold starts with and without a spare
# (BenchmarkColdStart: median and p99), then the end-to-end table: a
# trivial tool on both runtimes, 20 cold starts with and without a spare
# (--cold: median and p99), beside the baselines over the same
# function (one python3 process per call, a Python standard-library HTTP
# tool server, a Go-python3 pipe round trip as the floor, the bare call
# inside python3), each with its ratio to toolhost; and the HTTP doors
# of one toolhost serve (POST /v1/calls, a session call, MCP tools/call)
# beside the Python server: CPU per call from the processes' own
# counters, p50 and p99 unpinned and pinned to one CPU, calls/s at 1, 2,
# 4 and 8 callers. The table is also written as JSON to bench.json, to
# compare versions.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./core/... ./storage/...
	$(BIN) bench --runtime both --baselines --http-scaling 1,2,4,8 --via-plugin --scaling 1,2,4,8,16 --density 1,10,50,200 --serve-density 200 --cold 20 --n 3000 --concurrency 4 --out bench.json sample_groups/bench/bench.yaml noop '{"x": 1}'

# The console's screenshots in docs/console (README shows them), made by
# its browser tests in a real Chromium, as PNGs of what the screen shows
# at 1280 and 390 px (NAME-WIDTH.png).
screenshots: tools
	TOOLHOST_CONSOLE_SHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run 'TestConsoleInBrowser|TestConsoleFormsInBrowser|TestConsoleFitsEveryWidth|TestConsoleDocsInBrowser|TestConsoleDarkScheme' ./core/api

clean:
	rm -rf bin
