# Two set-up commands: `make run` (the main job on the bundled example data) and `make test`.
# Both create or reuse a local virtual environment in .venv; nothing else needs installing first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
comma := ,
# Optional extras for the environment: CI adds `spark`; `make bench` adds `bench`.
EXTRAS ?= test
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: run test ui clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

# NDCG_EVAL_DEV=1: the landing folder, queries table and storage default to the checkout's
# example data and .storage/ (a deployment names them instead; README "Deployment").
run: $(STAMP)
	NDCG_EVAL_DEV=1 $(BIN)/python -m evaluation_pipeline.main_job

# The Dagster UI on the instance `make run` fills, bound to 127.0.0.1; its sensors watch the
# landing folder of `make run`'s week.
ui: run
	NDCG_EVAL_DEV=1 DAGSTER_HOME=$(CURDIR)/.dagster_home NDCG_EVAL_LANDING=$(CURDIR)/.storage/example-landing \
	NDCG_EVAL_QUERIES=$(CURDIR)/examples/data/nightly/queries.csv \
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

clean:
	rm -rf .storage .dagster_home out
