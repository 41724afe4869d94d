"""Summary statistics of solution lengths."""

from __future__ import annotations

import numpy as np


def summarize(clicks, cleared, best_known=None, reference=None) -> dict:
    """Summary statistics of solution lengths.

    Args:
      clicks, cleared: per-board results of one agent, ``[N]``.
      best_known: optional ``[N]`` best known (or optimal) lengths.
      reference: optional ``[N]`` lengths of a reference solver to compare against.

    Lengths statistics cover cleared boards only; ``not_cleared`` counts the rest.
    """
    clicks, cleared = np.asarray(clicks), np.asarray(cleared, bool)
    solved = clicks[cleared]
    summary = {
        "boards": int(clicks.size),
        "not_cleared": int((~cleared).sum()),
        "mean": float(solved.mean()) if solved.size else float("nan"),
        "median": float(np.median(solved)) if solved.size else float("nan"),
        "std": float(solved.std()) if solved.size else float("nan"),
    }
    if best_known is not None:
        best_known = np.asarray(best_known)
        summary["share_equal_best"] = float(np.mean(cleared & (clicks <= best_known)))
        summary["mean_gap_to_best"] = float(np.mean(clicks[cleared] - best_known[cleared])) if solved.size else float("nan")
    if reference is not None:
        summary["share_at_least_as_good_as_reference"] = float(np.mean(cleared & (clicks <= np.asarray(reference))))
    return summary
