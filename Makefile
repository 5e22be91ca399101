# Hereabouts — build, test, run and measure.
#   make run    installs what is missing, builds, and starts the stack
#   make test   installs what is missing, builds, and runs every test
SHELL := /bin/bash
.DEFAULT_GOAL := build

SYSTEM_PACKAGES := libzmq3-dev libsqlite3-dev pkg-config
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
RELEASE_BIN := .build/release

.PHONY: deps build release test run bench clean

## deps: apt-install the C libraries the build links against, when missing
deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do \
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
test: deps
	swift build --build-tests
	swift test --skip-build

## run: start the stack in the foreground (for now: auth); Ctrl-C stops it
run: release
	@echo "auth listening on $${HEREABOUTS_AUTH_ENDPOINT:-tcp://127.0.0.1:7101}; data in $${HEREABOUTS_DATA_DIR:-$$HOME/.local/share/hereabouts}"
	$(RELEASE_BIN)/auth-service

## bench: measure against the peers named in the issues; writes Docs/BENCHMARKS.md
bench: release
	$(RELEASE_BIN)/hereabouts-bench all --output Docs/BENCHMARKS.md

clean:
	swift package clean
