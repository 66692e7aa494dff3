# Two set-up commands: `make run` (the main job on the bundled example data) and `make test`.
# Both create or reuse a local virtual environment in .venv; nothing else needs installing first.
# `make run` installs the package and its runtime dependencies alone; `make test` adds the
# `test` extra (the oracles, servers and browser the tests drive).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
comma := ,
space := $(subst ,, )
# Optional extras for the environment: CI adds `spark` and `postgres`; `make bench` adds `bench`.
EXTRAS ?=
# `make test`'s extras: `test` and any EXTRAS, each once.
TEST_EXTRAS := $(subst $(space),$(comma),$(sort test $(subst $(comma),$(space),$(EXTRAS))))
# One install stamp per set of extras: .venv/.installed (none), .venv/.installed-test, ...
stamp = $(VENV)/.installed$(if $(1),-$(subst $(comma),-,$(1)))

.PHONY: run test test-all lint ui clean

# The UI's port on 127.0.0.1.
UI_PORT ?= 3000

# Says what it installs, then each package as pip collects it (pip's own status is kept). An
# install with extras holds the runtime's too, so it also stamps `make run`'s.
$(sort $(call stamp,$(EXTRAS)) $(call stamp,$(TEST_EXTRAS))): pyproject.toml
	@extras="$$(echo '$(notdir $@)' | sed -e 's/^\.installed-*//' -e 's/-/,/g')"; \
	echo "make: installing ndcg-eval and its runtime dependencies$${extras:+, with the extras [$$extras],} into $(VENV) (the first time only)"; \
	$(PYTHON) -m venv $(VENV) && $(BIN)/pip install --quiet --upgrade pip || exit 1; \
	{ $(BIN)/pip install --progress-bar off -e ".$${extras:+[$$extras]}" 2>&1; echo $$? > $(VENV)/.pip-status; } \
		| grep -E '^(Collecting|ERROR|error)' | sed 's/^Collecting \([^ ]*\).*/  \1/'; \
	status=$$(cat $(VENV)/.pip-status); rm -f $(VENV)/.pip-status; [ "$$status" = 0 ] || exit "$$status"; \
	touch $@ $(call stamp,); echo "make: installed; $(VENV) holds $$(du -sh $(VENV) | cut -f1)"

# NDCG_EVAL_DEV=1: the landing folder, queries table and storage default to the checkout's
# example data and .storage/ (a deployment names them instead; README "Deployment").
run: $(call stamp,$(EXTRAS))
	NDCG_EVAL_DEV=1 $(BIN)/python -m evaluation_pipeline.main_job

# The Dagster UI on the instance `make run` fills, bound to 127.0.0.1; its sensors watch the
# landing folder of `make run`'s week. `dagster dev` and its children stop with make: on
# Ctrl-C, SIGTERM, or when make itself is killed (evaluation_pipeline/dev_ui.py, exec'd by the
# recipe's shell so that make is its parent). The week is played first only when no `make run`
# has landed it yet: on an existing instance the UI starts at once. The sensors evaluate under
# the week's spec (evaluation_pipeline/orchestration/example_week.py), or NDCG_EVAL_SPEC's.
ui: $(call stamp,$(EXTRAS))
	@[ -d .storage/example-landing ] && [ -f .dagster_home/dagster.yaml ] || $(MAKE) --no-print-directory run
	NDCG_EVAL_DEV=1 DAGSTER_HOME=$(CURDIR)/.dagster_home NDCG_EVAL_LANDING=$(CURDIR)/.storage/example-landing \
	NDCG_EVAL_QUERIES=$(CURDIR)/examples/data/nightly/queries.csv \
	NDCG_EVAL_SPEC=$${NDCG_EVAL_SPEC:-$(CURDIR)/examples/trec_dl_spec.yaml} \
	exec $(BIN)/python -m evaluation_pipeline.dev_ui -w workspace.yaml -h 127.0.0.1 -p $(UI_PORT)

# The tests in two tiers (README "Tests"), each on two workers, a test file per worker at a time
# (`--dist loadfile`: a file's module fixtures are built once), in tests/conftest.py's order.
# `make test`: the unit tests and the pipeline in process; no test under a slow/ folder. A test
# whose requirement is missing is skipped, its reason in the summary.
PYTEST := $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder
test: $(call stamp,$(TEST_EXTRAS))
	$(PYTEST) -m "not slow" --durations=10

# `make test-all` (CI, `.ci/run`): every test, the slow/ folders' too (subprocesses, faults,
# servers, the browser, Spark, PostgreSQL, the documented blocks). A skip is a failure naming
# what is missing (tests/support/requirements.py), and a file that cannot be collected for want
# of one does not stop the others.
test-all: $(call stamp,$(TEST_EXTRAS))
	NDCG_EVAL_REQUIRE_ALL=1 $(PYTEST) --continue-on-collection-errors --durations=25

# ruff, configured in pyproject.toml's [tool.ruff]; it comes with the `test` extra. CI (`.ci/run`)
# runs it before `make test-all` with the same EXTRAS: one install stamp serves both.
lint: $(call stamp,$(TEST_EXTRAS))
	$(BIN)/ruff check .

clean:
	rm -rf .storage .dagster_home out
