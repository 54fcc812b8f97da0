# Every target creates .venv and installs the project on first use, so each works alone
# on a fresh clone: `make demo`, `make test`, `make check`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: dev demo test lint fmt check bench schemas clean

# Two stamps: the runtime alone (jax, jaxlib, typer, rich, pyyaml) is all `make demo` needs;
# `make dev`/`test`/`lint` add the extras (dev tools, libtpu, the CUDA plugin).
BASE := $(VENV)/.installed-base

$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(BASE)

$(STAMP): $(BASE)
	$(BIN)/python -m pip install --quiet -e '.[dev,tpu,cuda]'
	touch $(STAMP)

dev: $(STAMP)

demo: $(BASE)
	$(BIN)/jaxinspect stages sample_programs/mlp.py:predict --shapes sample_programs/mlp.yaml

# The suite on every core (pytest-xdist, -n auto) in a random order (pytest-randomly; the
# seed is printed at the end). Serially: `.venv/bin/python -m pytest`; one order again:
# `--randomly-seed=N`; file order: `-p no:randomly`.
test: $(STAMP)
	$(BIN)/python -m pytest -n auto -p randomly

lint: $(STAMP)
	$(BIN)/ruff format --check jaxinspect tests
	$(BIN)/ruff check jaxinspect tests
	$(BIN)/mypy
	$(BIN)/lint-imports

fmt: $(STAMP)
	$(BIN)/ruff format jaxinspect tests
	$(BIN)/ruff check --fix jaxinspect tests

check: lint test

# The JSON Schemas that are generated from the report types (jaxinspect/schemas/generate.py);
# tests/test_jsondocs.py fails while a committed one is not current.
schemas: $(STAMP)
	$(BIN)/python -m jaxinspect.schemas.generate

bench: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_stages.py
	$(BIN)/python tests/benchmarks/bench_passes_time.py
	$(BIN)/python tests/benchmarks/bench_bench_accuracy.py
	$(BIN)/python tests/benchmarks/bench_snapdiff.py
	$(BIN)/python tests/benchmarks/bench_snapdiff.py --renumber 20
	$(BIN)/python tests/benchmarks/bench_phase_fidelity.py
	$(BIN)/python tests/benchmarks/bench_snapshot_reliability.py
	$(BIN)/python tests/benchmarks/bench_plugin_reliability.py
	$(BIN)/python tests/benchmarks/bench_cli_fuzz.py
	$(BIN)/python tests/benchmarks/bench_check_jobs.py
	$(BIN)/python tests/benchmarks/bench_check_isolation.py
	$(BIN)/python tests/benchmarks/bench_latency_gate.py
	$(BIN)/python tests/benchmarks/bench_topology.py
	$(BIN)/python tests/benchmarks/bench_gpu.py
	$(BIN)/python tests/benchmarks/bench_cost_measure.py
	$(BIN)/python tests/benchmarks/bench_passes.py
	$(BIN)/python tests/benchmarks/bench_scale.py
	$(BIN)/python tests/benchmarks/bench_report_graph.py 96
	$(BIN)/python tests/benchmarks/bench_runlog.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .grimp_cache
