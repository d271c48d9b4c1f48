# Faultline: `make run` opens the demo, `make test` runs every test.
SWIFT ?= swift
APT_PACKAGES := libsqlite3-dev libncurses-dev tmux pkg-config

.PHONY: run test build release deps bench fuzz clean

# Installs the system packages Faultline needs, where they are missing and we may install.
deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing with sudo:$$missing"; sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "please install:$$missing"; exit 1; \
	  fi; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Builds in release mode and opens the demo database (created in ~/.cache/faultline on first run).
run: release
	.build/release/faultline

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The README's benchmark table and plot come from here.
bench: release
	.build/release/faultline bench --rows 1000000 --plot Assets/memory-1M.svg

# Longer deterministic random runs: browser keys and the predicate and expression parsers
# (make test runs 4,000 of each), and the model-based browser run (3,000 steps in make test).
fuzz: deps
	$(SWIFT) build --build-tests
	FAULTLINE_FUZZ_KEYS=200000 FAULTLINE_FUZZ_RUNS=200000 FAULTLINE_MODEL_STEPS=100000 $(SWIFT) test --skip-build --filter 'RandomKeyTests|ModelTests|random'

clean:
	rm -rf .build
