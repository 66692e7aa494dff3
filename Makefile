# Two set-up commands: `make run` (the main job on the bundled example data) and `make test`.
# Both create or reuse a local virtual environment in .venv; nothing else needs installing first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test ui bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m evaluation_pipeline.main

test: $(STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf .storage .dagster_home out
