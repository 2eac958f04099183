# The two commands of the README. Each bootstraps a virtualenv in .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/penstock prebuild --device cpu || echo "penstock prebuild skipped: first queries will compile these kernels"
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/penstock demo

# CPU backend: unit + differential suite (and the server's tests with real psql, JDBC,
# SQLAlchemy and a real PostgreSQL with postgres_fdw), then NVRTC compile of every kernel
# the suite generated.
test: $(BIN)/.installed
	scripts/install-system-deps.sh
	PENSTOCK_KERNEL_LOG=$(CURDIR)/.kernel-log $(BIN)/python -m pytest -n 2 -q
	# the corpus again on the plan interpreter: its answers must be the compiled kernels'
	PENSTOCK_INTERPRET=always $(BIN)/python -m pytest -n 2 -q tests/differential/test_queries.py tests/differential/test_postgresql.py
	$(BIN)/python -m penstock.device.gpu.nvrtc_check $(CURDIR)/.kernel-log

clean:
	rm -rf $(VENV) .kernel-log .pytest_cache
