# focused: a learning focused crawler on Scrapy.  `make help` lists the targets.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
# the demo's own defaults (focused demo --help) unless given: make crawl TOPIC=course COMPARE=none
TOPIC ?=
SEEDS ?=
STRATEGY ?=
PAGES ?=
COMPARE ?=
BENCH_ARGS ?=
INSTALLED := .make/install.stamp


.PHONY: help install install-redis install-chromium crawl demo test bench bench-quick bench-frontier bench-distributed bench-traps bench-speed bench-features bench-ceiling models lint docs format clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

install:  ## install the pinned dependencies, the package (editable), redis-server and chromium (for tests)
	@command -v redis-server >/dev/null || $(MAKE) --no-print-directory install-redis
	@command -v chromium >/dev/null || $(MAKE) --no-print-directory install-chromium
	$(PIP) install -q -r requirements.txt
	$(PIP) install -q --no-deps -e .
	@mkdir -p .make && touch $(INSTALLED)

# The targets that need the dependencies depend on this stamp: pip runs again only when one of the files it
# installs from changed (or after `make clean`); `make install` always installs.
$(INSTALLED): requirements.txt setup.py pyproject.toml
	@$(MAKE) --no-print-directory install

install-redis:  ## install redis-server from Debian's packages (as root; CI)
	@if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "redis-server is missing: install it (Debian: sudo apt-get install redis-server) for the Redis tests" >&2; \
	else \
		log=$$(mktemp); \
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
				redis-server; } >$$log 2>&1; then cat $$log >&2; rm -f $$log; exit 1; fi; \
		rm -f $$log; echo "installed $$(redis-server --version | cut -d' ' -f1-3)"; \
	fi

install-chromium:  ## install chromium from Debian's packages (as root; CI): the report test opens the HTML in it
	@if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "chromium is missing: install it (Debian: sudo apt-get install chromium) for the report test" >&2; \
	else \
		log=$$(mktemp); \
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
				chromium; } >$$log 2>&1; then cat $$log >&2; rm -f $$log; exit 1; fi; \
		rm -f $$log; echo "installed $$(chromium --version 2>/dev/null)"; \
	fi

crawl: $(INSTALLED)  ## offline demo: the default crawler beside the baseline on a held-out WebKB university; SEEDS=url[,url] TOPIC=... crawls the live web
ifeq ($(strip $(SEEDS)),)
	$(PYTHON) -m focused demo$(if $(TOPIC), --topic $(TOPIC))$(if $(STRATEGY), --strategy $(STRATEGY))$(if $(PAGES), --pages $(PAGES))$(if $(COMPARE), --compare $(COMPARE))
else
	scrapy crawl focused -a topic=$(or $(TOPIC),course) -a seeds=$(SEEDS) -a strategy=$(or $(STRATEGY),apprentice)$(if $(PAGES), -a max_pages=$(PAGES))
endif

demo: crawl  ## same as `make crawl`

# The test files run on 4 pytest-xdist workers (more than the cores: many tests wait on crawls, servers and
# kills), one file per worker at a time, longest first (tests/conftest.py); pytest-benchmark, when installed, would
# warn that xdist disables it, and the suite turns warnings into errors.
test: $(INSTALLED)  ## run the whole test suite (4 pytest-xdist workers; `python -m pytest -q` runs it in one process)
	$(PYTHON) -m pytest -q -n 4 --dist loadgroup --no-loadscope-reorder -p no:benchmark

bench: $(INSTALLED)  ## run the benchmarks (results/ gets JSON, Markdown and plots), then bench-frontier, -distributed, -traps, -speed
	$(PYTHON) -m focused bench $(BENCH_ARGS)
	$(PYTHON) -m focused bench-frontier --out results/frontier
	$(PYTHON) -m focused bench-distributed --out results/distributed
	$(PYTHON) -m focused bench-traps --out results/traps
	$(PYTHON) -m focused bench-speed --out results/speed

bench-speed: $(INSTALLED)  ## pages/s and CPU per page vs plain Scrapy on the all-200 Wikipedia replay, stages, memory (results/speed)
	$(PYTHON) -m focused bench-speed --out results/speed

bench-frontier: $(INSTALLED)  ## frontier stores: throughput, re-scoring, kill -9 and resume (results/frontier)
	$(PYTHON) -m focused bench-frontier --out results/frontier

bench-distributed: $(INSTALLED)  ## workers on one Redis: 1 vs 2 workers, round trips, re-scoring, kill -9 (results/distributed)
	$(PYTHON) -m focused bench-distributed --out results/distributed

bench-traps: $(INSTALLED)  ## crawler traps: share of a 500-page budget spent in traps, per strategy (results/traps)
	$(PYTHON) -m focused bench-traps --out results/traps

bench-quick: $(INSTALLED)  ## a short smoke run of the benchmarks
	$(PYTHON) -m focused bench --quick $(BENCH_ARGS)

bench-features: $(INSTALLED)  ## the paper's apprentice feature studies (DOM window, <t,d> vs plain text)
	$(PYTHON) -m focused bench-features --out results

bench-ceiling: $(INSTALLED)  ## how far learning from the critic can go: simulated crawls on the bench webs (results/ceiling)
	$(PYTHON) -m focused.bench.studies.ceiling --tracks webkb,wiki --budget 1000 --out results/ceiling --reference results/harvest-once/bench.json
	$(PYTHON) -m focused.bench.studies.ceiling --tracks webkb --budget 1000 --page-view discriminative --out results/ceiling --reference results/harvest-once/bench.json

models: $(INSTALLED)  ## rebuild the default models in models/ from ../shared
	$(PYTHON) -m focused models --out models

lint:  ## ruff (lint + format check), mypy and the import layers (lint-imports)
	$(PYTHON) -m ruff check focused tests
	$(PYTHON) -m ruff format --check focused tests
	$(PYTHON) -m mypy focused
	lint-imports

docs:  ## regenerate docs/settings.md from focused/settings/defaults.py
	$(PYTHON) -m focused settings-doc --out docs/settings.md

format:  ## apply ruff's formatting and safe fixes
	$(PYTHON) -m ruff check --fix focused tests
	$(PYTHON) -m ruff format focused tests

clean:  ## remove crawl outputs, caches and egg builds (not models/)
	rm -rf .make crawls results/cache build focused.egg-info .pytest_cache .mypy_cache .ruff_cache
