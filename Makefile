# Faultline: `make run` opens the demo, `make test` runs every test.
SWIFT ?= swift
SWIFTC ?= $(dir $(shell command -v $(SWIFT)))swiftc
APT_PACKAGES := libsqlite3-dev sqlite3 libncurses-dev tmux pkg-config openssl

.PHONY: run test build release deps bench fuzz fuzz-build fuzz-short fuzz-long clean install uninstall screenshots docs check-sqlite-build check-core

# PostgreSQL in the faultline program is the package trait `PostgreSQL`. `make run` leaves it out:
# a SQLite user's first build skips postgres-nio and its TLS stack (see Documentation/Development.md
# for the times). `make install` and `make test` build it in; install in its own folder, so that
# `make run` and `make install` never rebuild each other's configuration.
WITH_POSTGRES := --traits PostgreSQL
INSTALL_BUILD := $(SWIFT) build -c release --product faultline $(WITH_POSTGRES) --scratch-path .build-install

# Coverage-guided fuzzing with libFuzzer and AddressSanitizer (both ship with the Swift toolchain):
# one harness per input kind, a seed corpus per harness in Tests/FuzzCorpus/<name>/, and what
# libFuzzer learns kept in .build-fuzz/corpus/<name>/ (crashes in .build-fuzz/crash-<name>-*; the Swift
# backtracer is off so that libFuzzer and AddressSanitizer report the crash themselves).
FUZZERS := predicate:FuzzPredicate assignments:FuzzAssignments csv:FuzzCSV ndjson:FuzzNDJSON
# (lld: gold stops with an internal error on these binaries.)
FUZZ_BUILD := $(SWIFT) build --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
# Seconds per harness: make test runs each briefly, make fuzz for minutes.
FUZZ_SHORT ?= 20
FUZZ_SHORT_RUNS ?= 200000
FUZZ_LONG ?= 300

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
	@# PostgreSQL for the tests' own server (Debian's postgresql-15, else the release's postgresql);
	@# optional: without it the PostgreSQL tests are skipped, saying why.
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then sudo="sudo"; \
	  else echo "PostgreSQL is not installed: its tests will be skipped (install postgresql-15)"; exit 0; fi; \
	  $$sudo apt-get update -qq; pkg=postgresql-15; apt-cache show $$pkg >/dev/null 2>&1 || pkg=postgresql; \
	  echo "installing: $$pkg (the tests start their own server from it)"; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg \
	    || echo "could not install $$pkg: the PostgreSQL tests will be skipped"; \
	fi

build: deps
	$(SWIFT) build $(WITH_POSTGRES)

# The faultline product alone, for SQLite (what `make run` opens): its dependencies, not every target.
release: deps
	$(SWIFT) build -c release --product faultline

# Where `make install` puts the binary: $(PREFIX)/bin/faultline.
PREFIX ?= $(HOME)/.local
BINDIR := $(PREFIX)/bin

# Shell completion scripts (`faultline --generate-completion-script SHELL`), where each shell looks
# for them under $(PREFIX)/share: bash-completion's and fish's user folders, and zsh's site-functions
# (which a zsh user adds to fpath).
COMPLETIONS := bash:share/bash-completion/completions/faultline zsh:share/zsh/site-functions/_faultline fish:share/fish/vendor_completions.d/faultline.fish

# Builds in release mode with PostgreSQL and copies the binary to $(BINDIR); says where, and
# whether it is on PATH; then a completion script for each shell installed on this machine.
install: deps
	$(INSTALL_BUILD)
	@mkdir -p "$(BINDIR)"
	@install -m 0755 "$$($(INSTALL_BUILD) --show-bin-path)/faultline" "$(BINDIR)/faultline"
	@echo "installed $(BINDIR)/faultline"
	@for c in $(COMPLETIONS); do sh=$${c%%:*}; file="$(PREFIX)/$${c#*:}"; \
	  command -v $$sh >/dev/null 2>&1 || continue; \
	  mkdir -p "$$(dirname "$$file")" && "$(BINDIR)/faultline" --generate-completion-script $$sh > "$$file.tmp" \
	    && mv -f "$$file.tmp" "$$file" && echo "installed $$sh completion: $$file" \
	    || { rm -f "$$file.tmp"; echo "warning: could not write $$file"; }; \
	  if [ $$sh = zsh ]; then echo "  (zsh: add $$(dirname "$$file") to fpath before compinit)"; fi; done
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; \
	  *) echo "warning: $(BINDIR) is not on PATH; add it, e.g. export PATH=\"$(BINDIR):\$$PATH\"" ;; esac

uninstall:
	@if [ -e "$(BINDIR)/faultline" ]; then rm -f "$(BINDIR)/faultline" && echo "removed $(BINDIR)/faultline"; \
	else echo "nothing to remove: $(BINDIR)/faultline does not exist"; fi
	@for c in $(COMPLETIONS); do file="$(PREFIX)/$${c#*:}"; \
	  if [ -e "$$file" ]; then rm -f "$$file" && echo "removed $$file"; fi; done

# The DocC catalogs of the two libraries, with warnings (a broken ``Symbol`` link) as errors.
DOCS_OUT := .build/docs
docs:
	@mkdir -p $(DOCS_OUT)
	$(SWIFT) package --allow-writing-to-directory $(DOCS_OUT) generate-documentation --target BatchStore \
	  --warnings-as-errors --disable-indexing --output-path $(DOCS_OUT)/BatchStore
	$(SWIFT) package --allow-writing-to-directory $(DOCS_OUT) generate-documentation --target BatchStorePostgres \
	  --warnings-as-errors --disable-indexing --output-path $(DOCS_OUT)/BatchStorePostgres

# The README's screenshots: the browser run headless on a demo database (`faultline snapshot`),
# each picture after the keys given here. --allow-edits only so that the status line reads as
# `faultline` shows it (no "read-only"): none of these keys edits.
SCREENSHOT_ROWS ?= 1000000
SCREENSHOT_DB := .build/screenshots/demo-$(SCREENSHOT_ROWS).sqlite
screenshots: build
	@bin="$$($(SWIFT) build --show-bin-path)/faultline"; mkdir -p .build/screenshots; \
	[ -e "$(SCREENSHOT_DB)" ] || "$$bin" demo --rows $(SCREENSHOT_ROWS) --output "$(SCREENSHOT_DB)" || exit 1; \
	"$$bin" snapshot --allow-edits "$(SCREENSHOT_DB)" --table movie --sort 'rating desc' --keys 'jjjll' --out Assets/screen-grid.svg && \
	"$$bin" snapshot --allow-edits "$(SCREENSHOT_DB)" --table movie --keys 'G<PgUp>km' --out Assets/screen-memory.svg && \
	"$$bin" snapshot --allow-edits "$(SCREENSHOT_DB)" --table movie --where 'year >= 1990' --keys 'lllllFj' --out Assets/screen-freq.svg && \
	"$$bin" snapshot --allow-edits "$(SCREENSHOT_DB)" --table movie --keys 'Ijjj' --out Assets/screen-summary.svg --size 140x16 && \
	"$$bin" snapshot --allow-edits "$(SCREENSHOT_DB)" --table movie --where 'year >= 1990 AND genre == "Drama"' --keys 'jj<Enter>' --out Assets/screen-record.svg --size 100x14 && \
	"$$bin" snapshot --allow-edits "$(SCREENSHOT_DB)" --table movie --where 'year >= 1990 AND genre == "Drama"' --keys 'Q' --out Assets/screen-sql.svg --size 100x16

# Builds in release mode and opens the demo database (created in ~/.cache/faultline on first run).
run: release
	.build/release/faultline

# Every test (Swift Testing; suites tagged .postgres, .tmux, .slow), then each fuzzer briefly;
# ends with the time each part took.
test: deps
	@t0=$$(date +%s); \
	$(SWIFT) build --build-tests $(WITH_POSTGRES) || exit 1; t1=$$(date +%s); \
	$(SWIFT) test --skip-build $(WITH_POSTGRES) || exit 1; t2=$$(date +%s); \
	$(MAKE) --no-print-directory check-sqlite-build check-core || exit 1; t3=$$(date +%s); \
	$(MAKE) --no-print-directory fuzz-short || exit 1; t4=$$(date +%s); \
	echo "make test: build $$((t1 - t0)) s, tests $$((t2 - t1)) s, SQLite-only build and core check $$((t3 - t2)) s, fuzzers $$((t4 - t3)) s"

# make run's configuration (no PostgreSQL), in a folder of its own so that neither rebuilds the
# other: it builds, and refuses a PostgreSQL URL with one line and exit 2.
check-sqlite-build:
	$(SWIFT) build --product faultline --scratch-path .build-sqlite
	@out=$$(.build-sqlite/debug/faultline export 'postgresql://nobody@localhost/none' --table t 2>&1); code=$$?; \
	if [ $$code -eq 2 ] && [ "$$(printf '%s\n' "$$out" | wc -l)" -eq 1 ] && printf '%s' "$$out" | grep -q 'built without PostgreSQL'; then \
	  echo "the SQLite-only build refuses a PostgreSQL URL in one line"; \
	else echo "the SQLite-only build answered a PostgreSQL URL with exit $$code: $$out"; exit 1; fi

# BatchStore's engine-neutral core (Sources/BatchStore/Core) compiles as a module of its own,
# without GRDB or SQLite: the step toward a core target both engines build on.
check-core:
	$(SWIFTC) -typecheck -swift-version 6 -module-name BatchCore -package-name faultline Sources/BatchStore/Core/*.swift
	@echo "Sources/BatchStore/Core type-checks alone, without GRDB"

# The README's benchmark table and plot come from here.
bench: release
	.build/release/faultline bench --rows 1000000 --plot Assets/memory-1M.svg

# Longer deterministic random runs (browser keys, the model-based browser run, the predicate and
# expression parsers and the predicate model, upserts and undos, the command-line verbs against
# sqlite3; make test runs fewer of each), then each libFuzzer harness for FUZZ_LONG seconds.
fuzz: deps
	$(SWIFT) build --build-tests $(WITH_POSTGRES)
	FAULTLINE_FUZZ_KEYS=200000 FAULTLINE_FUZZ_RUNS=200000 FAULTLINE_FUZZ_STEPS=2000 FAULTLINE_MODEL_STEPS=100000 $(SWIFT) test --skip-build $(WITH_POSTGRES) --filter 'RandomKeyTests|ModelTests|random'
	$(MAKE) fuzz-long

fuzz-build:
	@for f in $(FUZZERS); do $(FUZZ_BUILD) --product $${f#*:} || exit 1; done

# Each harness for FUZZ_SHORT seconds or FUZZ_SHORT_RUNS inputs, whichever comes first, from the committed corpus.
fuzz-short: fuzz-build
	@for f in $(FUZZERS); do name=$${f%%:*}; exe=$${f#*:}; mkdir -p .build-fuzz/corpus/$$name; \
	  echo "fuzzing $$name for at most $(FUZZ_SHORT) s"; \
	  SWIFT_BACKTRACE=enable=no .build-fuzz/debug/$$exe -max_total_time=$(FUZZ_SHORT) -runs=$(FUZZ_SHORT_RUNS) -detect_leaks=0 -print_final_stats=0 \
	    -artifact_prefix=.build-fuzz/crash-$$name- .build-fuzz/corpus/$$name Tests/FuzzCorpus/$$name 2>.build-fuzz/$$name.log \
	  || { tail -40 .build-fuzz/$$name.log; exit 1; }; tail -1 .build-fuzz/$$name.log; done

fuzz-long: fuzz-build
	@for f in $(FUZZERS); do name=$${f%%:*}; exe=$${f#*:}; mkdir -p .build-fuzz/corpus/$$name; \
	  echo "fuzzing $$name for $(FUZZ_LONG) s"; \
	  SWIFT_BACKTRACE=enable=no .build-fuzz/debug/$$exe -max_total_time=$(FUZZ_LONG) -detect_leaks=0 -print_final_stats=1 \
	    -artifact_prefix=.build-fuzz/crash-$$name- .build-fuzz/corpus/$$name Tests/FuzzCorpus/$$name 2>.build-fuzz/$$name.log \
	  || { tail -40 .build-fuzz/$$name.log; exit 1; }; tail -12 .build-fuzz/$$name.log; done

clean:
	rm -rf .build .build-fuzz .build-install .build-sqlite
