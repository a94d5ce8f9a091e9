# iggo — every go command runs with -checklinkname=0 (giouring reaches into
# package syscall). `make help` lists the targets.
GO      ?= go
BIN     := bin

# Version stamping (iggo-server --version, iggo --version): in a git work
# tree the toolchain records the commit (-buildvcs=true; elsewhere, a
# tarball or a machine without git, it is off and the binaries say
# "unknown"). `make build` also links in the build date and the commit, the
# latter for linked worktrees, which the toolchain does not stamp.
GIT_TREE    := $(shell git rev-parse --is-inside-work-tree 2>/dev/null)
BUILDVCS    := $(if $(filter true,$(GIT_TREE)),true,false)
COMMIT      := $(if $(filter true,$(GIT_TREE)),$(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell test -z "$$(git status --porcelain 2>/dev/null)" || echo -dirty))
BUILD_DATE  := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/iggo/iggo/internal/version
LDFLAGS     := -checklinkname=0 -X $(VERSION_PKG).buildDate=$(BUILD_DATE)$(if $(COMMIT), -X $(VERSION_PKG).commit=$(COMMIT))
export GOFLAGS := -buildvcs=$(BUILDVCS) -ldflags=-checklinkname=0

# Time each fuzz target runs under `make fuzz`, and under `make test` (short).
FUZZTIME ?= 10s
TEST_FUZZTIME ?= 4s

.PHONY: all help build run cluster cluster-down bench-cluster bench-transports bench-peers bench-scaling bench-soak bench-disk test test-short vet fmt-check bench bench-server bench-storage fuzz sim sim-mutations sim-stack sim-stack-mutations clean chaos chaos-campaign \
	ui-screenshots bench-ui \
	docker-binaries docker-image compose-up compose-demo compose-kill compose-down compose-certs

all: build

# Every target with a "## " description, then the variables most used.
help: ## this list
	@echo "make <target> [VAR=value ...]; targets:"
	@grep -E '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  \1\t\2/' | expand -t 18
	@echo "variables: ARGS (make run), CLUSTER_DIR, CLUSTER_BASE_PORT (make cluster), RUNS, DURATION, SEED,"
	@echo "  CHAOS_ARGS (make chaos), SEEDS, TIME, BASE (make sim), FUZZTIME (make fuzz), DOCKER_IMAGE, COMPOSE_FILE, NODE,"
	@echo "  PEERS_OUT, PEERS_BATCHES, PEERS_PRODUCERS, PEERS_JS_MODES, PEERS_ARGS (make bench-peers),"
	@echo "  SCALING_PRODUCERS, SCALING_PARTITIONS, SCALING_CELL_DATA, SCALING_BOOT_DATA (make bench-scaling),"
	@echo "  SOAK_DURATION, SOAK_RATE, SOAK_PRODUCERS, SOAK_PARTITIONS (make bench-soak)"

build: ## bin/iggo-server and bin/iggo (version, commit and build date linked in)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# Starts a single-node server on 127.0.0.1:8090 from the embedded default
# config; root credentials iggy/iggy; data under ./local_data. ARGS are
# extra iggo-server flags, e.g. make run ARGS="--config my.toml".
ARGS ?=
run: build ## a single node on 127.0.0.1:8090, root iggy/iggy, data in ./local_data (ARGS="...": more flags)
	./$(BIN)/iggo-server --with-default-root-credentials $(ARGS)

# A local 3-node cluster of background servers (127.0.0.1, client ports
# CLUSTER_BASE_PORT.., data under CLUSTER_DIR); `make cluster-down` stops it
# (iggo cluster down --purge also removes the data).
CLUSTER_DIR       ?= local_cluster
CLUSTER_BASE_PORT ?= 8090
cluster: build ## a local 3-node cluster in the background (iggo cluster up)
	./$(BIN)/iggo cluster up --nodes 3 --dir $(CLUSTER_DIR) --base-port $(CLUSTER_BASE_PORT)

cluster-down: ## stop it (data kept)
	./$(BIN)/iggo cluster down --dir $(CLUSTER_DIR)

# Throughput of a single node and then a 3-node local cluster in one run
# (not part of `make test`): iggo bench pp (BENCH_PRODUCERS pinned
# producers, 1 KB messages, batches of 1,000, BENCH_CLUSTER_BATCHES batches
# each) for a replicated and then a persisted topic, each printing its
# summary. The single node serves on BENCH_CLUSTER_PORT+10; the cluster runs
# under BENCH_CLUSTER_DIR on client ports BENCH_CLUSTER_PORT.., and the
# producers connect to node BENCH_CLUSTER_NODE (0 forwards the sends of a
# partition whose primary is elsewhere; the first partition's view-0
# primary in a fresh local cluster is node 1). Everything is stopped and
# removed afterwards, also when a run fails.
BENCH_CLUSTER_DIR     ?= /tmp/iggo-bench-cluster
BENCH_CLUSTER_PORT    ?= 27090
BENCH_CLUSTER_BATCHES ?= 500
BENCH_CLUSTER_NODE    ?= 0
BENCH_PRODUCERS       ?= 1
BENCH_CLUSTER_ARGS    ?=
bench-cluster: build ## iggo bench pp against a single node, then a 3-node cluster
	@set -e; \
	single=$(BENCH_CLUSTER_DIR)-single; rm -rf $$single; mkdir -p $$single; \
	trap 'kill $$spid 2>/dev/null || true; wait $$spid 2>/dev/null || true; rm -rf $$single; ./$(BIN)/iggo cluster down --dir $(BENCH_CLUSTER_DIR) --purge >/dev/null 2>&1 || true' EXIT; \
	IGGY_PATH=$$single/data IGGY_TCP_ADDRESS=127.0.0.1:$$(($(BENCH_CLUSTER_PORT)+10)) \
	  ./$(BIN)/iggo-server --with-default-root-credentials >$$single/server.log 2>&1 & spid=$$!; \
	for i in $$(seq 1 100); do \
	  ./$(BIN)/iggo --tcp-server-address 127.0.0.1:$$(($(BENCH_CLUSTER_PORT)+10)) ping -c 1 >/dev/null 2>&1 && break; sleep 0.2; \
	done; \
	for d in replicated persisted; do \
	  echo "== single node, $$d"; \
	  ./$(BIN)/iggo --tcp-server-address 127.0.0.1:$$(($(BENCH_CLUSTER_PORT)+10)) bench pp -p $(BENCH_PRODUCERS) -m 1000 -P 1000 \
	    -b $(BENCH_CLUSTER_BATCHES) --durability $$d --progress none --remark "single node" $(BENCH_CLUSTER_ARGS); \
	done; \
	kill $$spid; wait $$spid 2>/dev/null || true; \
	./$(BIN)/iggo cluster up --nodes 3 --dir $(BENCH_CLUSTER_DIR) --base-port $(BENCH_CLUSTER_PORT) --fresh; \
	for d in replicated persisted; do \
	  echo "== 3-node cluster, $$d, producers on node $(BENCH_CLUSTER_NODE)"; \
	  ./$(BIN)/iggo --tcp-server-address 127.0.0.1:$$(($(BENCH_CLUSTER_PORT)+$(BENCH_CLUSTER_NODE))) bench pp -p $(BENCH_PRODUCERS) -m 1000 -P 1000 \
	    -b $(BENCH_CLUSTER_BATCHES) --durability $$d --progress none --remark "3-node local cluster" $(BENCH_CLUSTER_ARGS); \
	done

# iggo bench pp over tcp, tcp-tls, ws and wss in one run
# (tests/bench/transports/run.sh; not part of `make test`): interleaved
# rounds, medians and ratios to plaintext TCP.
BENCH_TRANSPORTS_ROUNDS  ?= 3
BENCH_TRANSPORTS_BATCHES ?= 100
bench-transports: build ## iggo bench pp over every client transport, ratios to plaintext TCP
	ROUNDS=$(BENCH_TRANSPORTS_ROUNDS) BATCHES=$(BENCH_TRANSPORTS_BATCHES) PRODUCERS=$(BENCH_PRODUCERS) tests/bench/transports/run.sh $(BIN)

# iggo beside NATS JetStream in one run (tests/bench/peers; its short form
# runs in `make test` as TestCompareShort): nats-server NATS_SERVER_VERSION
# and the nats CLI NATS_CLI_VERSION are go-installed outside the module into
# PEERS_TOOLS (reused while the version matches); then single node and 3
# nodes, replicated vs JetStream R1/R3 file store with default sync and
# persisted vs sync_interval: always, PEERS_PRODUCERS producers, 1,000-byte
# messages: iggo bench pp in batches of 1,000 (PEERS_BATCHES per producer,
# PEERS_PERSISTED_BATCHES on persisted rows) against nats bench js pub for
# each of PEERS_JS_MODES with the same message count. The disk is measured
# first (PEERS_DISK_BYTES in 16 MiB writes, each followed by fdatasync).
# Writes PEERS_OUT/peers.md (table, ratios), peers.json and peers.png. The
# servers' data lives under PEERS_WORK; every process started is stopped and
# the directory removed afterwards, also when a run fails or is interrupted
# (the tool's own clean-up, then this trap: it kills only pids listed in
# PEERS_WORK/<run>/pids whose command line or environment names that directory).
PEERS_OUT               ?= peers_results
PEERS_WORK              ?= /tmp/iggo-peers
PEERS_TOOLS             ?= $(HOME)/.cache/iggo-peers
NATS_SERVER_VERSION     ?= v2.15.2
NATS_CLI_VERSION        ?= v0.5.0
PEERS_BATCHES           ?= 300
PEERS_PERSISTED_BATCHES ?= 40
PEERS_PRODUCERS         ?= 1,4
PEERS_JS_MODES          ?= fast:1000,async:500
PEERS_PORT              ?= 27290
PEERS_DISK_BYTES        ?= 1GiB
PEERS_ARGS              ?=
PEERS_CLEANUP = if [ -f $$w/pids ]; then for p in $$(cat $$w/pids); do \
	  if grep -qasF "$$w" /proc/$$p/cmdline /proc/$$p/environ 2>/dev/null; then kill $$p 2>/dev/null || true; fi; \
	done; fi; \
	if [ -d $$w/iggo-cluster ]; then ./$(BIN)/iggo cluster down --dir $$w/iggo-cluster --purge >/dev/null 2>&1 || true; fi; \
	rm -rf $$w
bench-peers: build ## iggo vs NATS JetStream, one run: table, ratios and chart in PEERS_OUT
	$(GO) build -o $(BIN)/ ./tests/bench/peers/cmd/iggo-peers
	@set -e; w=$(PEERS_WORK)/compare; trap '$(PEERS_CLEANUP)' EXIT; \
	./$(BIN)/iggo-peers compare -bin $(BIN) -out $(PEERS_OUT) -work $$w -tools $(PEERS_TOOLS) \
	  -nats-server-version $(NATS_SERVER_VERSION) -nats-version $(NATS_CLI_VERSION) \
	  -batches $(PEERS_BATCHES) -persisted-batches $(PEERS_PERSISTED_BATCHES) -producers $(PEERS_PRODUCERS) \
	  -js-modes $(PEERS_JS_MODES) -base-port $(PEERS_PORT) -disk-bytes $(PEERS_DISK_BYTES) $(PEERS_ARGS)

# A scaling table of one node (tests/bench/peers; short form in `make test`
# as TestScalingShort): for each of SCALING_PARTITIONS a fresh node, iggo
# bench bpcg (SCALING_PRODUCERS producers and as many consumers in one
# group polling while they send, SCALING_CELL_DATA in all) with the server's
# peak RSS from /proc, then SCALING_BOOT_DATA written and the restart timed
# (0: no boot rows). Writes PEERS_OUT/scaling.md and scaling.json.
SCALING_PRODUCERS  ?= 1,4,16
SCALING_PARTITIONS ?= 1,100,10000
SCALING_CELL_DATA  ?= 1GB
SCALING_BOOT_DATA  ?= 10GB
SCALING_ARGS       ?=
bench-scaling: build ## one node: producers x partitions (throughput, RSS), boot time with data
	$(GO) build -o $(BIN)/ ./tests/bench/peers/cmd/iggo-peers
	@set -e; w=$(PEERS_WORK)/scaling; trap '$(PEERS_CLEANUP)' EXIT; \
	./$(BIN)/iggo-peers scaling -bin $(BIN) -out $(PEERS_OUT) -work $$w -producers $(SCALING_PRODUCERS) \
	  -partitions $(SCALING_PARTITIONS) -cell-data $(SCALING_CELL_DATA) -boot-data $(SCALING_BOOT_DATA) \
	  -base-port $(PEERS_PORT) $(SCALING_ARGS)

# One node's memory under a steady load (tests/bench/peers; short form in
# `make test` as TestSoakShort): iggo bench bpcg, SOAK_PRODUCERS producers
# and as many consumers in one group, SOAK_PARTITIONS partitions, limited to
# SOAK_RATE for SOAK_DURATION, the server's VmRSS sampled every second and
# tabled per minute. Writes PEERS_OUT/soak.md and soak.json.
SOAK_DURATION   ?= 10m
SOAK_RATE       ?= 50MB
SOAK_PRODUCERS  ?= 4
SOAK_PARTITIONS ?= 4
bench-soak: build ## one node under a steady load for 10 minutes: RSS per minute
	$(GO) build -o $(BIN)/ ./tests/bench/peers/cmd/iggo-peers
	@set -e; w=$(PEERS_WORK)/soak; trap '$(PEERS_CLEANUP)' EXIT; \
	./$(BIN)/iggo-peers soak -bin $(BIN) -out $(PEERS_OUT) -work $$w -duration $(SOAK_DURATION) -rate $(SOAK_RATE) \
	  -producers $(SOAK_PRODUCERS) -partitions $(SOAK_PARTITIONS) -base-port $(PEERS_PORT)

# The disk's sequential write bandwidth: PEERS_DISK_BYTES in 16 MiB writes,
# each followed by fdatasync, to a temporary file in DISK_DIR (removed).
DISK_DIR ?= /tmp
bench-disk: ## sequential write bandwidth with 16 MiB fdatasync batches
	$(GO) run ./tests/bench/peers/cmd/iggo-peers disk -dir $(DISK_DIR) -bytes $(PEERS_DISK_BYTES) -chunk 16MiB

vet: ## go vet ./...
	$(GO) vet ./...

fmt-check: ## gofmt -l over the tracked Go files
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Everything CI runs: formatting, vet, the unit/scenario/integration tests
# with the race detector, and each fuzz target for a short time.
test: fmt-check vet ## everything CI runs (needs Docker, root, ip and nft; see README)
	$(GO) test -race -count=1 -timeout 30m ./...
	$(MAKE) sim-mutations
	$(MAKE) sim-stack-mutations
	$(MAKE) fuzz FUZZTIME=$(TEST_FUZZTIME)

bench: ## every Go benchmark
	$(GO) test -run '^$$' -bench . -benchmem ./...

# End-to-end server figures only (tests/bench, also part of `make bench`):
# produce and consume of 1 KB x 1,000-message batches, one and four
# clients, replicated and persisted topics, against a real iggo-server.
SERVER_BENCHTIME ?= 300x
bench-server: ## end-to-end server figures (tests/bench)
	$(GO) test -run '^$$' -bench . -benchtime $(SERVER_BENCHTIME) ./tests/bench/

# The web console (/ui): screenshots of every page for the README, taken
# by headless chromium (Debian's package) against a real 3-node cluster
# holding demo data (tests/webui TestScreenshots; the charts wait for
# UI_CHART_SAMPLES one-second samples). Written to docs/ui/.
UI_CHART_SAMPLES ?= 45
ui-screenshots: ## the console's screenshots in docs/ui (real cluster, headless chromium)
	$(GO) test -count=1 -run '^TestScreenshots$$' -timeout 15m ./tests/webui/ -args -ui.screenshots=$(CURDIR)/docs/ui -ui.chart-samples=$(UI_CHART_SAMPLES)

# Console page loads, navigation to first paint of the data: a topic of
# 1,000 partitions and a partition of 1,000,000 messages (also in `make bench`).
UI_BENCHTIME ?= 20x
bench-ui: ## console page-load figures (tests/webui BenchmarkPageLoad)
	$(GO) test -run '^$$' -bench PageLoad -benchtime $(UI_BENCHTIME) -timeout 30m ./tests/webui/

# Runs every Fuzz* target in every package for FUZZTIME each. Go 1.26's fuzz
# engine can end a time-bounded run with "context deadline exceeded" and no
# failing input (golang/go#75804); that outcome counts as a pass, while any
# run that writes a failing input fails the target.
fuzz: ## every fuzz target for FUZZTIME
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== fuzz $$pkg $$f ($(FUZZTIME))"; \
	    if ! out=$$($(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg 2>&1); then \
	      if echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
	        echo "   (fuzz engine deadline quirk, no failing input: pass)"; \
	      else echo "$$out"; exit 1; fi; \
	    fi; \
	  done; \
	done

# Consensus simulator campaign (tests/sim): SEEDS seeds starting at BASE
# (0: derived from the clock and printed), stopping after TIME. A failing seed
# prints the one-line command that replays it.
SEEDS ?= 10000
TIME  ?= 60m
BASE  ?= 0
sim: ## a consensus simulator campaign (SEEDS, TIME, BASE)
	$(GO) test ./tests/sim -run 'TestSim$$' -count=1 -timeout 0 -v -seeds=$(SEEDS) -time=$(TIME) -base=$(BASE)

# Runs the simulator against each deliberate safety breakage in vsr (build tag
# vsrmutations) and fails unless every one is caught.
sim-mutations: ## the simulator against deliberate vsr safety bugs
	$(GO) test -tags vsrmutations ./tests/sim -run 'TestMutations' -count=1 -v

# The real-stack simulator (tests/sim/stack: consensus driver, journal,
# superblock, partition, segments over fault-injecting disks). `make test`
# runs its short campaign through go test; these run long ones.
STACK_SEEDS ?= 50000
sim-stack: ## a real-stack simulator campaign (STACK_SEEDS, TIME, BASE)
	$(GO) test ./tests/sim/stack -run 'TestStack$$' -count=1 -timeout 0 -v -seeds=$(STACK_SEEDS) -time=$(TIME) -base=$(BASE)

sim-stack-mutations: ## the real-stack simulator against deliberate storage-stack bugs
	$(GO) test -tags stackmutations ./tests/sim/stack -run 'TestStackMutations' -count=1 -v

clean: ## remove bin/ and the Docker build directory
	rm -rf $(BIN) $(DOCKER_BUILD_DIR)

# Storage figures: io_uring vs portable appends and group commit, the
# journal on top, and the machine's own sequential write bandwidth (dd) to
# compare with. Temporary files go under /tmp and are removed.
BENCHTIME ?= 300x
bench-storage: ## io_uring vs portable storage figures, and dd
	$(GO) test -run '^$$' -bench 'Append1MB|GroupCommit' -benchtime $(BENCHTIME) -count 3 ./shard/vfs/
	$(GO) test -run '^$$' -bench 'PartitionAppend1MB' -benchtime $(BENCHTIME) -count 3 ./journal/
	@f=$$(mktemp /tmp/iggo-dd-XXXXXX); \
	echo "dd buffered:"; dd if=/dev/zero of=$$f bs=1M count=1024 2>&1 | tail -1; rm -f $$f; \
	f=$$(mktemp /tmp/iggo-dd-XXXXXX); \
	echo "dd conv=fdatasync:"; dd if=/dev/zero of=$$f bs=1M count=1024 conv=fdatasync 2>&1 | tail -1; rm -f $$f

# Chaos campaigns (internal/chaos, the runner `iggo chaos` uses): RUNS runs of DURATION each, seeds SEED,
# SEED+1, ... against iggo-server when cmd/iggo-server exists, else against
# the built-in fake node. More flags in CHAOS_ARGS, e.g.
#   make chaos RUNS=10 DURATION=2m CHAOS_ARGS="--nodes 3 --faults all"
RUNS       ?= 1
DURATION   ?= 30s
SEED       ?= 0
CHAOS_ARGS ?=
chaos: ## chaos campaigns (RUNS, DURATION, SEED, CHAOS_ARGS)
	$(GO) build -o $(BIN)/iggo-chaos ./internal/chaos/cmd/iggo-chaos
	$(if $(wildcard cmd/iggo-server),$(GO) build -o $(BIN)/iggo-server ./cmd/iggo-server)
	./$(BIN)/iggo-chaos run --runs $(RUNS) --duration $(DURATION) --seed $(SEED) \
	  $(if $(wildcard cmd/iggo-server),--server $(BIN)/iggo-server,--fake) $(CHAOS_ARGS)

# Exactly-once campaign: CAMPAIGN_RUNS schedules of CAMPAIGN_DURATION on a
# real 3-node cluster with kills, pauses, partitions and one-way
# partitions (network namespaces: root, ip, nft), seeds SEED, SEED+1, ...
# Short schedules so 50 fit in about half an hour on a small machine; the
# checker allows no duplicate at all, acknowledged or unknown-outcome, and
# the totals (schedules, faults, retried sends, duplicates) close the run.
# The CI form is TestCampaignExactlyOnce in tests/chaos (two schedules).
CAMPAIGN_RUNS     ?= 50
CAMPAIGN_DURATION ?= 10s
chaos-campaign: ## exactly-once chaos campaign on 3 nodes (CAMPAIGN_RUNS, CAMPAIGN_DURATION, SEED, CHAOS_ARGS)
	$(GO) build -o $(BIN)/iggo-chaos ./internal/chaos/cmd/iggo-chaos
	$(GO) build -o $(BIN)/iggo-server ./cmd/iggo-server
	./$(BIN)/iggo-chaos run --runs $(CAMPAIGN_RUNS) --duration $(CAMPAIGN_DURATION) --seed $(SEED) \
	  --server $(BIN)/iggo-server --nodes 3 --network netns --faults kill,pause,partition,partition-oneway \
	  --interval 1s --fault-length 1s $(CHAOS_ARGS)

# Docker (deploy/): the image is FROM scratch around static binaries built
# here, so nothing is pulled. DOCKER_IMAGE names it; the compose files use
# $IGGO_IMAGE, set from it below. COMPOSE is `docker compose` when the
# plugin exists, else docker-compose. COMPOSE_FILE picks the 3-node file or
# deploy/docker-compose.single.yml; COMPOSE_PROJECT names the project.
DOCKER          ?= docker
DOCKER_IMAGE    ?= iggo:dev
DOCKER_BUILD_DIR ?= deploy/.build
COMPOSE         ?= $(shell if $(DOCKER) compose version >/dev/null 2>&1; then echo "$(DOCKER) compose"; else echo docker-compose; fi)
COMPOSE_FILE    ?= deploy/docker-compose.yml
COMPOSE_PROJECT ?= iggo
# COMPOSE_TLS=1 layers deploy/docker-compose.tls.yml (TLS on the client
# transports; run `make compose-certs` first).
COMPOSE_TLS     ?=
COMPOSE_CMD      = IGGO_IMAGE=$(DOCKER_IMAGE) $(COMPOSE) -f $(COMPOSE_FILE) $(if $(COMPOSE_TLS),-f deploy/docker-compose.tls.yml) -p $(COMPOSE_PROJECT)

# A CA and a server certificate for the compose nodes (deploy/certs, not
# committed). DEMO: the key is made readable by the image's user.
compose-certs: build ## certificates for COMPOSE_TLS=1
	./$(BIN)/iggo cluster certs --dir deploy/certs --host 172.29.0.11 --host 172.29.0.12 --host 172.29.0.13 --host localhost
	chmod 0644 deploy/certs/server.key

docker-binaries: ## static binaries for the image
	rm -rf $(DOCKER_BUILD_DIR)
	mkdir -p $(DOCKER_BUILD_DIR)/data
	CGO_ENABLED=0 $(GO) build -trimpath -o $(DOCKER_BUILD_DIR)/ ./cmd/iggo-server ./cmd/iggo
	CGO_ENABLED=0 $(GO) build -trimpath -o $(DOCKER_BUILD_DIR)/iggo-demo ./deploy/demo
	CGO_ENABLED=0 $(GO) build -trimpath -o $(DOCKER_BUILD_DIR)/iggo-healthcheck ./deploy/healthcheck

docker-image: docker-binaries ## the FROM scratch image (DOCKER_IMAGE)
	$(DOCKER) build -t $(DOCKER_IMAGE) -f deploy/Dockerfile $(DOCKER_BUILD_DIR)

# Starts the nodes and waits until every one (every container with a
# health check) runs and reports healthy.
compose-up: docker-image ## start the compose cluster and wait until healthy
	$(COMPOSE_CMD) up -d
	@for i in $$(seq 1 90); do \
	  ids=$$($(COMPOSE_CMD) ps -a -q); \
	  states=$$($(DOCKER) inspect -f '{{if .State.Health}}{{if .State.Running}}{{.State.Health.Status}}{{else}}stopped{{end}}{{end}}' $$ids | grep -v '^$$'); \
	  if [ -n "$$states" ] && ! echo "$$states" | grep -qv '^healthy$$'; then echo "all nodes healthy"; exit 0; fi; \
	  sleep 2; \
	done; $(COMPOSE_CMD) ps; echo "nodes not healthy after 180 s"; exit 1

compose-demo: ## run the produce/verify demo against it
	$(COMPOSE_CMD) --profile demo run --rm demo

# Kills one node (NODE, default node-1) the hard way; `make compose-up`
# starts it again.
NODE ?= node-1
compose-kill: ## kill one node (NODE)
	$(DOCKER) kill $$($(COMPOSE_CMD) ps -a -q $(NODE))

compose-down: ## stop and remove the compose project
	$(COMPOSE_CMD) --profile demo down -v
