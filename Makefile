# `make run` and `make test` each create .venv when missing (or when pyproject.toml changed)
# and install accelopt with its dev extras into it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check lint bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "accelopt needs Python >= 3.11"'
	@# Kernels run under bubblewrap (the OS sandbox): install it where we may (root with apt).
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		apt-get install -y -q bubblewrap >/dev/null; } || \
		echo "accelopt: bubblewrap is missing; install it (apt install bubblewrap)" >&2
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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

# Everything, as CI runs it: the end-to-end tests (slow) and PostgreSQL's included. Two
# workers (pytest-xdist), each taking whole files: the slow tests mostly wait on daemons,
# children and locks, and a file's tests share its fixtures.
PYTEST_WORKERS ?= -n 2 --dist loadfile
test: lint
	$(BIN)/pytest $(PYTEST_WORKERS)

# The fast loop while working: lint, types, and the tests that need neither a real daemon
# process end to end nor the PostgreSQL server.
check: lint
	$(BIN)/pytest $(PYTEST_WORKERS) -m "not slow and not postgres"

bench: $(STAMP)
	$(BIN)/accelopt bench store

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
