"""The measures beyond NDCG, declared once, computed in one compiled pass with their bounds.

The interface, for the spec's ``measures:`` field, per_query.parquet's long shape, the engines,
the CLI's ``--measure`` and the API:

- ``evaluation_pipeline.measures.declarations``: ``DECLARATIONS``, one ``Declaration`` per
  measure (name and ``ParamInfo`` parameters as ir_measures has them, kernel code, conventions for
  unjudged / unknown / tied documents and a query without a relevant document, the bounds'
  algorithm, the trec_eval and ir_measures equivalents). Tables of measures (docs/spec.md, CLI
  help) are generated from it.
- ``evaluation_pipeline.measures.parse``: ``parse_measure("RR(rel=2)@10")`` gives a frozen
  ``Measure`` whose ``str()`` is the canonical name as ir_measures prints it (the ``measure``
  column); a bad name raises ``MeasureError`` (an ``EvaluationError``) naming what it
  expected and the nearest name. Validate a spec's list with ``plan.measures_of(names)`` and
  ``plan.plan_measures(measures, spec, 1)`` before anything is written: that refuses measures
  the spec's tie rule does not define.
- :mod:`.plan`: ``score_ranked(ranked, judged, names, spec, top_grade=, discount=)`` scores
  every query of a :class:`~.kernels.Ranked` (CSR offsets over candidates already in the spec's
  tie order: score, class, grade) against a :class:`~.kernels.Judged` (each query's graded
  grades, whether the version judges it, its unknown rows and its holes outside the
  candidates) and returns :class:`~.plan.MeasureValues`: value, status (the order of
  ``schemas.columns.STATUSES``), least and greatest, each (queries x measures). A
  ``missing_from_run`` row is the caller's, as for NDCG (``metric.ndcg.missing_from_run``).
- ``metric.ndcg.score_candidates`` (every engine's scoring) scores a spec's measures inside
  the NDCG kernel's pass, ``kernels.score_blocks_and_measures``, with the plan and conventions
  of ``plan.measure_rules``; ``score_ranked`` is the same per-query step over lists given.
- :mod:`.kernels`, :mod:`.values`, :mod:`.extremes`: the compiled pass, the per-list value of
  each measure, and the bounds over the holes (docs/CONTRACT.md, section 3, rule 7). nDCG is
  the NDCG kernel's own steps (``metric.kernels.dcg``, ``metric.kernels.bounds``).

Pure: no file I/O, no Dagster.
"""
