"""The integer codes the measures' kernels share with their callers (plain Python, no numba:
the parser and the declarations read them without loading the compiler)."""

from __future__ import annotations

# The kernel of each measure (declarations.Declaration.kernel, plan.Plan.kind).
(KIND_NDCG, KIND_DCG, KIND_RR, KIND_AP, KIND_P, KIND_R, KIND_SUCCESS, KIND_JUDGED, KIND_RPREC,
 KIND_BPREF, KIND_ERR, KIND_RBP) = range(12)

# Which gain a DCG or nDCG reads: the spec's, dcg=log2 (the grade) or dcg=exp-log2 (2^g - 1).
GAIN_SPEC, GAIN_LINEAR, GAIN_EXPONENTIAL = range(3)

# Status codes of a (query, measure), in the order of schemas.columns.STATUSES.
SCORED, NO_POSITIVE, INCOMPLETE, NOT_JUDGED = range(4)

# Bpref's bounds enumerate every relevant / non-relevant grading of the holes up to this many.
MAX_BPREF_HOLES = 16
