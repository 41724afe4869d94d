"""Summary statistics of solution lengths."""

from __future__ import annotations

import numpy as np


def deviation(values) -> float:
    """The sample standard deviation of ``values`` (``ddof=1``; NaN for fewer than two,
    where it is undefined: a 0 would read as exact): the ``std`` of every table, so that
    ``se`` beside it is ``std / sqrt(n)``."""
    values = np.asarray(values, float)
    return float(values.std(ddof=1)) if values.size > 1 else float("nan")


def standard_error(values) -> float:
    """The standard error of ``values``' mean, ``deviation(values) / sqrt(n)`` (NaN for
    fewer than two values; tables then show the mean alone). Of per-board differences
    between two agents on the same boards, it is the paired error that says whether their
    means differ by more than chance."""
    values = np.asarray(values, float)
    return deviation(values) / float(np.sqrt(values.size)) if values.size > 1 else float("nan")


def summarize(clicks, cleared, best_known=None, reference=None, reference_cleared=None) -> dict:
    """Summary statistics of solution lengths.

    Args:
      clicks, cleared: per-board results of one agent, ``[N]``.
      best_known: optional ``[N]`` best known (or optimal) lengths.
      reference: optional ``[N]`` lengths of a reference solver to compare against.
      reference_cleared: optional ``[N]``, the boards the reference cleared (None: all).

    The length statistics and the gap cover every board, a board not cleared at the clicks
    it was stopped at (the click cap, as ``benchmark.row`` counts it), so failing on a hard
    board never lowers a mean; ``not_cleared`` says how many there were. ``share_equal_best``
    counts the cleared boards at or below ``best_known`` (below: a best known beaten);
    ``share_at_least_as_good_as_reference`` the boards cleared in no more clicks than the
    reference, and those neither cleared (a tie at the cap). ``se`` is the mean's
    standard error; ``gap_se`` and ``difference_se`` are paired (per board) standard errors
    of the mean gap to ``best_known`` and of the mean difference to ``reference``.
    """
    clicks, cleared = np.asarray(clicks), np.asarray(cleared, bool)
    summary = {
        "boards": int(clicks.size),
        "not_cleared": int((~cleared).sum()),
        "mean": float(clicks.mean()),
        "median": float(np.median(clicks)),
        "std": deviation(clicks),
        "se": standard_error(clicks),
    }
    if best_known is not None:
        best_known = np.asarray(best_known)
        summary["share_equal_best"] = float(np.mean(cleared & (clicks <= best_known)))
        summary["mean_gap_to_best"] = float(np.mean(clicks - best_known))
        summary["gap_se"] = standard_error(clicks - best_known)
    if reference is not None:
        reference = np.asarray(reference)
        both_stuck = ~cleared & (np.zeros_like(cleared) if reference_cleared is None
                                 else ~np.asarray(reference_cleared, bool))
        summary["share_at_least_as_good_as_reference"] = float(np.mean((cleared & (clicks <= reference)) | both_stuck))
        summary["mean_difference_to_reference"] = float(np.mean(clicks - reference))
        summary["difference_se"] = standard_error(clicks - reference)
    return summary
