"""The integer codes the compiled kernels share with their callers.

Plain Python, no numba: ``metric.ndcg`` reads these at import, and a command that never scores
must not load the compiler (see ``metric.kernels.loading``).
"""

from __future__ import annotations

# Grade classes of a candidate (contract section 3, rule 1): they index the kernels' counts.
GRADED, UNKNOWN, UNJUDGED = 0, 1, 2
# Tie rules (spec.ties) as the kernels see them.
TIES_AVERAGE, TIES_DOC_ASC, TIES_DOC_DESC, TIES_RANK = 0, 1, 2, 3
# spec.no_positive as the bounds kernel sees it.
NO_POSITIVE_EXCLUDE, NO_POSITIVE_ZERO, NO_POSITIVE_ONE = 0, 1, 2
# A hole's kind in a block (the what-if kernel's ``ref``, and per ranker in
# ``analysis.worklist``): >= 0 is the row of its own what-if widths (a weighted hole), the
# others share the block's.
PAST_K = -1  # a hole of the block without a weight at K (or, per ranker, an outside unknown)
NOT_RETURNED = -2  # the ranker did not return the document
