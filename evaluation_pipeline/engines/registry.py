"""The engines by name, and the one place a name becomes an engine: ``auto`` is resolved by the
engine choice (``engines.choice``) for the inputs at hand; every other name is looked up here.
A new engine is one class behind the ``Engine`` protocol and one line below."""

from __future__ import annotations

import importlib

from evaluation_pipeline.engines.choice import AUTO, choose_engine
from evaluation_pipeline.engines.protocol import (
    Engine,
    EngineResult,
    Resources,
    ScoringInputs,
    ScoringOutput,
)
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.spec import EvaluationSpec

# Each engine's class, by the module that holds it: loaded when the engine is first named, so
# that naming one (the CLI's defaults, a resource's check) loads no other's stages (numba, the
# streaming threads, the Spark helpers).
_CLASSES = {
    "local": ("evaluation_pipeline.engines.local", "LocalEngine"),
    "streaming": ("evaluation_pipeline.engines.streaming.stream", "StreamingEngine"),
    "spark": ("evaluation_pipeline.engines.spark.engine", "SparkEngine"),
}
ENGINES = (AUTO, *_CLASSES)
# The engine ``auto`` stands for where there are no inputs to choose by (ingest, a report's
# sums): this machine's, which the local and streaming engines share.
_THIS_MACHINE = "local"


def engine_named(name: str) -> Engine:
    """The engine registered as ``name`` (not ``auto``, which needs inputs: ``resolve``)."""
    if name not in _CLASSES:
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    module, attribute = _CLASSES[name]
    return getattr(importlib.import_module(module), attribute)()


def resolve(name: str, inputs: ScoringInputs | None = None,
            budget: Budget | None = None) -> Engine:
    """The engine ``name`` names. ``auto``: the engine choice for ``inputs`` under ``budget``
    (default ``Budget.of()``); without inputs, this machine's engine (ingest and a report's
    sums run alike on the local and streaming engines)."""
    if name == AUTO:
        if inputs is None:
            return engine_named(_THIS_MACHINE)
        name = choose_engine(inputs.judgments, inputs.run,
                             judgments_format=inputs.judgments_format,
                             run_format=inputs.run_format, budget=budget)
    return engine_named(name)


def reads_urls(name: str) -> bool:
    """True when the engine ``name`` reads and writes object-storage URLs itself (Spark); the
    others, ``auto`` among them, score local copies of files on object storage."""
    return resolve(name).reads_urls


def score_inputs(inputs: ScoringInputs, spec: EvaluationSpec, output: ScoringOutput,
                 resources: Resources, engine: str = AUTO) -> EngineResult:
    """Score ``inputs`` under ``spec`` into ``output`` on the engine ``engine`` names
    (``auto``: ``resolve``, under the resources' budget)."""
    chosen = resolve(engine, inputs, resources.budget)
    return chosen.score(inputs, spec, output, resources)
