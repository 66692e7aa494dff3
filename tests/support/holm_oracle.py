"""statsmodels' Holm, the oracle of the families' adjusted p-values, without the full garbage
collection its ``multipletests`` runs on every call: in a test process holding polars, numba
and Dagster that collection took 60 ms a call, and the oracles call it thousands of times. The
numbers are statsmodels' own."""

from __future__ import annotations

from unittest import mock

from statsmodels.stats.multitest import multipletests


def holm_oracle(p_values, alpha: float = 0.05):
    """(reject, adjusted p) of statsmodels' ``multipletests(method="holm")``."""
    with mock.patch("gc.collect", return_value=0):
        reject, adjusted, _, _ = multipletests(p_values, alpha=alpha, method="holm")
    return reject, adjusted
