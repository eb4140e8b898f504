# Portvakt: a thin Makefile. Every target installs what it needs first.
SWIFT ?= swift
BIN_RELEASE := .build/release/portvakt
# One self-contained binary: the Swift runtime and FoundationEssentials linked in (no ICU), which also keeps the
# resident set small (only the pages used are loaded). Linked by lld with packed relative
# relocations (DT_RELR, glibc >= 2.36): the static runtime's ~83,000 relocations shrink from a
# 2 MB table the loader reads at every start to 16 kB, about 1.5 MB less resident memory. The
# DWARF sections (11 MB the process never maps) are left out; the symbol table stays, so perf,
# callgrind and crash backtraces still name every function.
RELEASE := -c release --static-swift-stdlib -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
	-Xlinker --strip-debug

.PHONY: deps build run test lint bench clean

deps:                ## install missing Debian packages (build level)
	@Tools/install-deps.sh build

build: deps          ## debug build of every target
	$(SWIFT) build

run: deps            ## release build, then serve on the embedded default (http://localhost:8080)
	$(SWIFT) build $(RELEASE) --product portvakt
	$(BIN_RELEASE) serve

test:                ## install, build, run every test (with a throwaway PostgreSQL), the sign-in page in headless Chromium, the app servers' view (PyJWT, the Standard Webhooks verifier), then the API contract (schemathesis)
	@Tools/install-deps.sh test
	$(SWIFT) build --build-tests
	@# The cluster is started for the Swift tests and stopped and removed after them, also when they fail.
	Tools/postgres-test-cluster.sh run $(SWIFT) test --skip-build
	Tests/Browser/run.sh
	Tools/postgres-test-cluster.sh run Tests/Backends/run.sh
	Tests/Contract/run.sh

lint:                ## check formatting with swift format
	$(SWIFT) format lint --strict --recursive Package.swift Modules Apps Tests Benchmarks

bench:               ## benchmarks: print tables, write .build/bench/results.json
	@Tools/install-deps.sh bench
	$(SWIFT) build $(RELEASE)
	Benchmarks/run.sh

clean:
	rm -rf .build
