# sweepkit: a thin wrapper over cargo and the scripts. `make help` lists targets.
SHELL := /bin/bash
CARGO ?= cargo
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(DESTDIR)$(PREFIX)/bin
MANDIR := $(DESTDIR)$(PREFIX)/share/man
# What sweep sources beside its bin/ (scripts/lib/fleet.sh for --hosts,
# scripts/lib/slurm.sh for --slurm).
LIBDIR := $(DESTDIR)$(PREFIX)/lib/sweepkit
# Where bash-completion, zsh and fish look for completions they ship with.
BASHCOMPDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHCOMPDIR := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
# The built binaries `install-files` copies.
BIN_SRC ?= target/release
# testkit's prerequisite gates log here; `unit` counts them at the end.
GATE_LOG := $(CURDIR)/target/gated-tests.log
TOOLS := svc-swap wait-ready loadgen summarize sweep-plan llm-sim
# Where the real llama-server and its models are cached (outside the repo).
export SWEEPKIT_CACHE ?= $(HOME)/.cache/sweepkit

.PHONY: help build release test lint unit man install install-files demo bench real-peer deps clean

help: ## List targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

deps: ## Install what the tests need (Debian packages, Python packages); idempotent
	bash scripts/deps.sh

build: ## Build every tool (debug)
	$(CARGO) build --workspace --all-targets

release: ## Build every tool (release)
	$(CARGO) build --workspace --release

lint: ## cargo fmt --check, clippy -D warnings, shellcheck
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	shellcheck -x scripts/*.sh .ci/run

# cargo-nextest (on the machines' toolchain) runs every binary's tests from
# one queue (.config/nextest.toml says why); plain cargo test if it is absent.
unit: build ## Every Rust test (needs deps and real-peer for the full set)
	rm -f $(GATE_LOG)
	export SWEEPKIT_TEST_LOG=$(GATE_LOG); \
	if $(CARGO) nextest --version >/dev/null 2>&1; then \
	  $(CARGO) nextest run --workspace --no-fail-fast; rc=$$?; \
	  $(CARGO) test --workspace --doc || rc=1; \
	else \
	  echo "make: cargo-nextest not found; cargo test runs one test binary at a time (slower)" >&2; \
	  $(CARGO) test --workspace --no-fail-fast; rc=$$?; \
	fi; \
	bash scripts/gated-summary.sh $(GATE_LOG) || rc=1; exit $$rc

test: ## Lint and every test (what CI runs); a missing prerequisite fails
	bash scripts/test.sh

man: ## Regenerate man/ (clap plus man/src/*.roff) and completions/ (clap)
	SWEEPKIT_UPDATE_MAN=1 $(CARGO) test --workspace man_page -- --quiet

install: release ## Install binaries, sweep, man pages, completions under PREFIX (honours DESTDIR)
	$(MAKE) install-files

install-files: ## What install copies, from BIN_SRC (default target/release), building nothing
	install -d $(BINDIR) $(LIBDIR) $(MANDIR)/man1 $(MANDIR)/man5 $(BASHCOMPDIR) $(ZSHCOMPDIR) $(FISHCOMPDIR)
	for t in $(TOOLS); do install -m 755 $(BIN_SRC)/$$t $(BINDIR)/$$t; done
	install -m 755 scripts/sweep.sh $(BINDIR)/sweep
	install -m 644 scripts/lib/fleet.sh $(LIBDIR)/fleet.sh
	install -m 644 scripts/lib/slurm.sh $(LIBDIR)/slurm.sh
	install -m 644 man/*.1 $(MANDIR)/man1/
	install -m 644 man/*.5 $(MANDIR)/man5/
	for t in $(TOOLS) sweep; do \
	  install -m 644 completions/$$t.bash $(BASHCOMPDIR)/$$t && \
	  install -m 644 completions/_$$t $(ZSHCOMPDIR)/_$$t && \
	  install -m 644 completions/$$t.fish $(FISHCOMPDIR)/$$t.fish || exit 1; \
	done

demo: release ## The full sweep against llm-sim (simulated server)
	bash scripts/demo.sh

bench: release ## Benchmarks against peers measured in the same run
	bash bench/run.sh

real-peer: ## Build llama-server, install vLLM and SGLang, make test models in $(SWEEPKIT_CACHE)
	bash scripts/real-peer.sh

clean: ## Remove build output
	$(CARGO) clean
