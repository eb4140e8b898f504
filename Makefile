# Portvakt: a thin Makefile. Every target installs what it needs first.
SWIFT ?= swift
BIN_RELEASE := .build/release/portvakt
# One self-contained binary: the Swift runtime and FoundationEssentials linked in (no ICU), which also keeps the
# resident set small (only the pages used are loaded). Linked by lld with packed relative
# relocations (DT_RELR, glibc >= 2.36): the static runtime's ~83,000 relocations shrink from a
# 2 MB table the loader reads at every start to 16 kB, about 1.5 MB less resident memory. The
# DWARF sections (11 MB the process never maps) are left out; the symbol table stays, so perf,
# callgrind and crash backtraces still name every function. Each function gets a section of its own
# (-function-sections) so lld can place them in the order Tools/symbol-order.txt gives: what
# `serve` runs from start to idle, then a passkey login, packed into few of the kernel's 64 KiB
# fault-around windows (Docs/performance-memory.md). Tools/symbol-order.sh regenerates it; names
# that no longer exist are skipped without a warning, so a stale file only costs resident memory.
# Tools/code-layout.ld gathers the compiler's unnamed functions, which no ordering file can name.
RELEASE := -c release --static-swift-stdlib -Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections \
	-Xlinker -z -Xlinker pack-relative-relocs -Xlinker --strip-debug \
	-Xlinker --symbol-ordering-file=$(CURDIR)/Tools/symbol-order.txt -Xlinker --no-warn-symbol-ordering \
	-Xlinker -T -Xlinker $(CURDIR)/Tools/code-layout.ld

.PHONY: deps build release run test lint bench clean

deps:                ## install missing Debian packages (build level)
	@Tools/install-deps.sh build

build: deps          ## debug build of every target
	$(SWIFT) build

release: deps        ## release build of the portvakt binary alone
	$(SWIFT) build $(RELEASE) --product portvakt

run: release         ## release build, then serve on the embedded default (http://localhost:8080)
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
