# Set-up on a fresh machine: `make bench` (main job) and `make test`.
# Every target first installs libatomic-ops-dev when pkg-config cannot find it.
SWIFT ?= swift
FUZZ_SECONDS ?= 60

.PHONY: deps build test test-tsan test-asan bench bench-quick clean

deps:
	@pkg-config --exists atomic_ops || { \
	  echo "installing libatomic-ops-dev"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && $$SUDO apt-get install -y libatomic-ops-dev pkg-config; }

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) test

test-tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan

test-asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/lsan.supp $(SWIFT) test --sanitize=address --scratch-path .build-asan

bench: deps
	$(SWIFT) run -c release benchmarks

bench-quick: deps
	$(SWIFT) run -c release benchmarks --quick

clean:
	rm -rf .build .build-*
