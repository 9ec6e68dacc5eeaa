# `make run` and `make test` each create .venv when missing (or when pyproject.toml changed)
# and install accelopt with its dev extras into it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test e2e coverage check lint fmt bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "accelopt needs Python >= 3.11"'
	@# Kernels run under bubblewrap (the OS sandbox): install it where we may (root with apt).
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		apt-get install -y -q bubblewrap >/dev/null; } || \
		echo "accelopt: bubblewrap is missing; install it (apt install bubblewrap)" >&2
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# FlashInfer-Bench's schema models only, without FlashInfer's CUDA stack (README.md).
	$(BIN)/python -m pip install --quiet --no-deps flashinfer-bench==0.1.2
	touch $(STAMP)

# The main job: the daemon in the foreground on the example kernel directory (SQLite under
# ~/.local/state/accelopt, nkisim). Without ACCELOPT_LLM_BASE_URL it profiles the baselines and
# sweeps the tunables, and says that the agents are idle. Ctrl-C stops it cleanly.
run: $(STAMP)
	$(BIN)/accelopt daemon --watch examples/kernels

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Before a commit (or install the same as a hook: pre-commit install): the code formatted and
# what ruff can fix, fixed; `make lint` then says what is left.
fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The tests, but the end-to-end ones (tests/e2e: `make e2e`): four workers (pytest-xdist) on
# two cores, each taking whole files (a file's tests share its fixtures). It must stay under
# 15 minutes on a 2-core host, lint and a fresh .venv included. Measured on one 2-core host
# (2026-11-28, a Python loop of 10M additions in 0.50 s), .ci/run on a fresh clone: `make test`
# 315 s (pytest 237 s, 1,747 tests), then `make e2e` 390 s (85 tests). The day before, CI ran
# everything in one pytest on a host where that loop took 1.03 s: 1,560 s, 60% of it in the
# end-to-end files. It prints the slowest tests.
PYTEST_WORKERS ?= -n 4 --dist loadfile
test: lint
	$(BIN)/pytest $(PYTEST_WORKERS) -m "not e2e" --durations=15

# The end-to-end tests: daemons, fleet workers, the scripted LLM server and PostgreSQL restarts
# as real processes, which wait on purpose (ten kills, three hosts, a one-minute soak, 2,000
# folders). CI runs them after `make test` (.ci/run).
e2e: $(STAMP)
	$(BIN)/pytest $(PYTEST_WORKERS) -m e2e --durations=15

# All the tests, the end-to-end ones included, with a coverage report (pytest-cov; a report,
# not a gate, and kept out of `make test`, whose 15 minutes it would stretch): the lines the
# tests' own processes ran, per file that misses some, and the total. Code run only in child
# processes (a daemon started end to end, the sandbox's children) is not counted.
coverage: lint
	$(BIN)/pytest $(PYTEST_WORKERS) --cov --cov-report=term:skip-covered

# The fast loop while working: lint, types, and the tests that need neither a real daemon
# process end to end nor the PostgreSQL server.
check: lint
	$(BIN)/pytest $(PYTEST_WORKERS) -m "not slow and not postgres"

bench: $(STAMP)
	$(BIN)/accelopt bench store

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .coverage .coverage.*
