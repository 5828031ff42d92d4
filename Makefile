# Set-up on a fresh machine: `make bench` (main job) and `make test`.
# Every target first installs libatomic-ops-dev when pkg-config cannot find it.
SWIFT ?= swift
FUZZ_SECONDS ?= 60
# The package's NIO and GRPC traits build the CollapsingFuturesNIO and
# CollapsingFuturesGRPC bridges and their tests (off by default, so that
# adopters of the core resolve neither swift-nio nor grpc-swift).
TRAITS = --traits NIO,GRPC
# The sanitizer runs leave the gRPC bridge and its tests out: building
# grpc-swift and its transport again with each sanitizer would take CI past
# its hour. (The bridge is thin Swift over the core those runs cover; its
# tests run in `make test`.)
SANITIZER_TRAITS = --traits NIO

.PHONY: deps build test test-tsan test-asan bench bench-chart bench-grpc bench-quick clean install-check

deps:
	@pkg-config --exists atomic_ops || { \
	  echo "installing libatomic-ops-dev"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && $$SUDO apt-get install -y libatomic-ops-dev pkg-config; }

build: deps
	$(SWIFT) build $(TRAITS)

# The suites whose every case waits for Tasks of the library's (a Task bound
# to a deadline, in loops and in the cross-product of registrations) run in
# a process of their own: in the suite's process, tests that block Swift's
# cooperative pool, which those Tasks need, held them back for minutes under
# ThreadSanitizer. So do the cross-process gRPC tests, which time what the
# processes they launch saw, away from the suite's load.
OWN_PROCESS = DeadlineBindings|RegistrationCrossProduct|GRPCHopTests

test: deps
	$(SWIFT) test $(TRAITS) --skip '$(OWN_PROCESS)'
	$(SWIFT) test $(TRAITS) --filter '$(OWN_PROCESS)'

# MutexBehaviourTests is skipped under TSan: Synchronization.Mutex locks with
# futex calls in a prebuilt module that ThreadSanitizer cannot see, so every
# access it guards is reported as a race (the same suite passes in `make test`,
# and the Dispatch-lock version it mirrors runs here).
test-tsan: deps
	$(SWIFT) test $(SANITIZER_TRAITS) --sanitize=thread --scratch-path .build-tsan --skip MutexBehaviourTests --skip '$(OWN_PROCESS)'
	$(SWIFT) test $(SANITIZER_TRAITS) --sanitize=thread --scratch-path .build-tsan --filter '$(OWN_PROCESS)'

test-asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/lsan.supp $(SWIFT) test $(SANITIZER_TRAITS) --sanitize=address --scratch-path .build-asan --skip '$(OWN_PROCESS)'
	LSAN_OPTIONS=suppressions=$(CURDIR)/lsan.supp $(SWIFT) test $(SANITIZER_TRAITS) --sanitize=address --scratch-path .build-asan --filter '$(OWN_PROCESS)'

# Prints the report and keeps it as .build/bench-report.md, with the ratios
# drawn as .build/ratios.svg (untracked: a run leaves the working tree clean).
bench: deps
	$(SWIFT) run -c release benchmarks --svg .build/ratios.svg > .build/bench-report.md; \
	status=$$?; cat .build/bench-report.md; \
	echo "make bench: report in .build/bench-report.md, chart in .build/ratios.svg"; exit $$status

# A run that redraws the committed chart, Benchmarks/ratios.svg: commit it
# with the figures Benchmarks/README.md gives from the same run.
bench-chart: deps
	$(SWIFT) run -c release benchmarks --svg Benchmarks/ratios.svg

# The gRPC bridge's cost on a unary call on loopback (the GRPC trait; a
# scratch path of its own, so that make bench's build stays as it is).
bench-grpc: deps
	$(SWIFT) run -c release --traits GRPC --scratch-path .build-grpc benchmarks --filter "gRPC unary"

bench-quick: deps
	$(SWIFT) run -c release benchmarks --quick

clean:
	rm -rf .build .build-*

# The README's install snippets in client packages built from a clone of
# this repository's HEAD (commit first).
install-check: deps
	.ci/install-check

# ---- fuzzing and stress ----------------------------------------------------
FUZZ_FLAGS = -c release --product fuzz --scratch-path .build-fuzz \
	-Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld \
	-Xswiftc -DLIBFUZZER -Xcc -fsanitize=fuzzer-no-link,address

.PHONY: fuzz fuzz-build fuzz-merge stress
fuzz-build: deps
	$(SWIFT) build $(FUZZ_FLAGS)

# Runs libFuzzer for FUZZ_SECONDS (default 60) from Tests/Fuzz/corpus; new
# inputs go to .build-fuzz/corpus, crashes to .build-fuzz/.
# -detect_leaks=0: the interpreter checks leaks itself, per program, by
# counting the deinit of every object a handler, continuation or timer
# captured (and `make test-asan` runs LeakSanitizer over the suite). The
# library keeps allocations across programs by design (each thread's node
# pool, the timer threads), which libFuzzer's malloc/free balance reads as
# a suspected leak on nearly every input, rerunning it under LeakSanitizer:
# that cut the rate to 130 programs/s from 756 (2 cores, Xeon).
fuzz: fuzz-build
	mkdir -p .build-fuzz/corpus
	SWIFT_BACKTRACE=enable=no .build-fuzz/release/fuzz .build-fuzz/corpus Tests/Fuzz/corpus \
	  -max_total_time=$(FUZZ_SECONDS) -max_len=512 -print_final_stats=1 -detect_leaks=0 \
	  -artifact_prefix=.build-fuzz/

# Minimises everything found (to edge coverage) into the committed corpus,
# which `swift test` replays (Tests/Fuzz/ReplayTests).
fuzz-merge: fuzz-build
	rm -rf .build-fuzz/merged && mkdir -p .build-fuzz/merged
	SWIFT_BACKTRACE=enable=no .build-fuzz/release/fuzz -merge=1 -use_counters=0 .build-fuzz/merged \
	  Tests/Fuzz/corpus .build-fuzz/corpus
	rm -f Tests/Fuzz/corpus/* && cp .build-fuzz/merged/* Tests/Fuzz/corpus/

# Random programs on all cores under ThreadSanitizer for STRESS_SECONDS.
STRESS_SECONDS ?= 300
stress: deps
	CF_STRESS_SECONDS=$(STRESS_SECONDS) $(SWIFT) test $(SANITIZER_TRAITS) --sanitize=thread --scratch-path .build-tsan --filter Stress

# ---- budgets -------------------------------------------------------------------
# Instructions (callgrind) and allocations (the interposer) per operation of
# the key scenarios, in a stripped release build, against
# Benchmarks/budgets.tsv (installs valgrind when missing): fails on 2% more
# instructions or any more allocations. `budget-update` writes the measured
# figures into the file (Benchmarks/budget.sh says when to).
.PHONY: budget budget-update
budget: deps
	bash Benchmarks/budget.sh
budget-update: deps
	bash Benchmarks/budget.sh --update

# ---- documentation ----------------------------------------------------------
.PHONY: docs
docs: deps
	$(SWIFT) package generate-documentation --target CollapsingFutures --warnings-as-errors

# ---- model checking --------------------------------------------------------
# Exhaustive spin runs of Model/cf_core.pml, link.pml and wheel.pml (installs
# spin when missing);
# model-mutants requires every planted bug to be caught.
.PHONY: model model-mutants
model:
	bash Model/run.sh
model-mutants:
	bash Model/run.sh mutants
