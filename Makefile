# turnline: `make demo` opens the app on a generated demo root; `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint types pytest bench screenshots clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/turnline demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# mypy sees the installed layout (turnline.core, turnline.tui, turnline.cli) through
# a tree of symlinks, since the sources sit at the top level of the repository.
types: $(STAMP)
	rm -rf build/typecheck && mkdir -p build/typecheck/turnline
	ln -s ../../../core build/typecheck/turnline/core
	ln -s ../../../tui build/typecheck/turnline/tui
	ln -s ../../../cli build/typecheck/turnline/cli
	cd build/typecheck && MYPYPATH=. ../../$(BIN)/mypy -p turnline.core -p turnline.tui -p turnline.cli

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

test: lint types pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build .mypy_cache .ruff_cache .pytest_cache
