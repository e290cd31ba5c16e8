# turnline: `make demo` opens the app on a generated demo root; `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint types pytest bench screenshots clean

$(STAMP): pyproject.toml
	@echo "turnline: setting up $(VENV) (first run only, about half a minute)…"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "turnline: installing turnline and its dependencies from pyproject.toml…"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)
	@echo "turnline: ready."

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/turnline demo

# mypy and import-linter see the installed layout (turnline.core, .tui, .cli) through
# a tree of symlinks, since the sources sit at the top level of the repository.
LAYOUT := build/typecheck
$(LAYOUT)/turnline:
	mkdir -p $(LAYOUT)/turnline
	ln -sfn ../../../core $(LAYOUT)/turnline/core
	ln -sfn ../../../tui $(LAYOUT)/turnline/tui
	ln -sfn ../../../cli $(LAYOUT)/turnline/cli
	ln -sfn ../../../demo $(LAYOUT)/turnline/demo

lint: $(STAMP) $(LAYOUT)/turnline
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	cd $(LAYOUT) && PYTHONPATH=. ../../$(BIN)/lint-imports --config ../../pyproject.toml

types: $(STAMP) $(LAYOUT)/turnline
	cd $(LAYOUT) && MYPYPATH=. ../../$(BIN)/mypy --config-file ../../pyproject.toml \
		-p turnline.core -p turnline.tui -p turnline.cli -p turnline.demo

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

test: lint types pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build .mypy_cache .ruff_cache .pytest_cache
