# benchsel: one entry point for set-up, tests and the book.
#
#   make test          create .venv, install benchsel with its [book,dev] extras, run the tests
#                      (plus the TabImpute adapter tests in .venv-tabimpute)
#   make book          ... fetch + verify the data, execute the notebooks, render the site
#   make book QUICK=1  the same with the notebooks' quick parameters
#   make bench-book    the book built as a fresh clone builds it (empty correlation cache), with
#                      per-notebook, execution, rendering and total seconds and the load average
#                      (also in _build/timings.json, and in benchmarks/results/book.json, which
#                      the performance page quotes); BENCHSEL_REPOSITORY_URL=... points the
#                      repository and launch buttons of any build to another repository
#
# Only Python 3.10+ (with venv), npm and the package registries are needed.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
QUICK  ?= 0
# one BLAS thread per process: the matrices are small and work runs in 2 processes
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
PYTEST_ARGS ?=

.PHONY: install test test-core test-tabimpute data book bench bench-book clean check-site

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[book,dev]"
	touch $@

install: $(VENV)/.installed

data: install
	$(BIN)/python -m benchsel_lib.data fetch

test: test-core test-tabimpute

test-core: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The TabImpute adapter runs in a venv of its own: the [tabimpute] extra pins
# torch==2.13.0 and pulls tabpfn, which forces pandas<3 and scikit-learn<1.8.
# If the extra cannot be installed here, its tests are reported as skipped.
TABVENV ?= .venv-tabimpute
test-tabimpute:
	@if [ -x $(TABVENV)/bin/python ] || $(PYTHON) -m venv $(TABVENV); then \
	  if $(TABVENV)/bin/python -m pip install --quiet -e ".[tabimpute,dev]"; then \
	    $(TABVENV)/bin/python -m pytest tests/test_imputers.py -k tabimpute -rs; \
	  else echo "test-tabimpute: SKIPPED: the [tabimpute] extra could not be installed"; fi; \
	else echo "test-tabimpute: SKIPPED: could not create $(TABVENV)"; fi

book: data
	$(BIN)/python scripts/build_book.py $(if $(filter 1,$(QUICK)),--quick,)

bench-book: data
	$(BIN)/python scripts/build_book.py --fresh

bench: install
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf _build build

check-site:
	$(BIN)/python scripts/check_site.py
