"""Summary statistics of solution lengths."""

from __future__ import annotations

import numpy as np


def summarize(clicks, cleared, best_known=None, reference=None) -> dict:
    """Summary statistics of solution lengths.

    Args:
      clicks, cleared: per-board results of one agent, ``[N]``.
      best_known: optional ``[N]`` best known (or optimal) lengths.
      reference: optional ``[N]`` lengths of a reference solver to compare against.

    The length statistics and the gap cover every board, a board not cleared at the clicks
    it was stopped at (the click cap, as ``benchmark.row`` counts it), so failing on a hard
    board never lowers a mean; ``not_cleared`` says how many there were.
    """
    clicks, cleared = np.asarray(clicks), np.asarray(cleared, bool)
    summary = {
        "boards": int(clicks.size),
        "not_cleared": int((~cleared).sum()),
        "mean": float(clicks.mean()),
        "median": float(np.median(clicks)),
        "std": float(clicks.std()),
    }
    if best_known is not None:
        best_known = np.asarray(best_known)
        summary["share_equal_best"] = float(np.mean(cleared & (clicks <= best_known)))
        summary["mean_gap_to_best"] = float(np.mean(clicks - best_known))
    if reference is not None:
        summary["share_at_least_as_good_as_reference"] = float(np.mean(cleared & (clicks <= np.asarray(reference))))
    return summary
