"""Grading the holes with a judge: the pairs a worklist names, sent to an OpenAI-compatible
chat-completions endpoint under a versioned prompt, come back as a judgment version whose
ratings carry their provenance (contract section 1, Judge ratings; docs/judging.md).

One job per module:

- ``document_reader``: the documents table (doc_id, title, text), read and validated;
- ``pairs``: the worklist or a list of pairs, each with its query's and document's text;
- ``prompt``: the template (its file, its SHA-256, the prompt of a pair) and a reply's grade;
- ``client``: one chat completion, with retries, backoff and the deadline;
- ``cache``: the answers already paid for, keyed by what the judge was asked;
- ``progress``: the progress line on stderr;
- ``run``: the pairs through the cache and the client, concurrently, within the budget;
- ``output``: the ratings as a judgment version, written whole or not at all;
- ``run_options``: a run's options (``ndcg-eval judge``'s, the ``judgments_llm`` asset's config),
  checked before anything is read or sent;
- ``calibration``: people's ratings, and documents they graded for the judge to grade too;
- ``gate``: the judge measured against people, and the thresholds that promote its version.

No Dagster here: ``ndcg-eval judge`` and ``ndcg-eval gate`` (``cli``) call these, and so does
the ``judgments_llm`` asset (``orchestration.judging_assets``).
"""
