"""PNG figures of solution lengths and learning curves (matplotlib, no display needed)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.figure import Figure


def _subplots(size: tuple[float, float]):
    """A figure outside pyplot: no display, no global backend change for the caller."""
    figure = Figure(figsize=size)
    return figure, figure.subplots()


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    return buffer.getvalue()


def value_histograms(values: dict[str, np.ndarray], title: str, measure: str) -> bytes:
    """Overlaid histograms of a per-board measure (e.g. points), one outline per agent."""
    figure, axis = _subplots((7, 4))
    every = np.concatenate([np.asarray(v, float) for v in values.values()])
    bins = np.linspace(every.min(), every.max() + 1, 31)
    for name, per_board in values.items():
        axis.hist(per_board, bins=bins, histtype="step", linewidth=2, label=f"{name} (mean {np.mean(per_board):.1f})")
    axis.set_xlabel(measure)
    axis.set_ylabel("boards")
    axis.set_title(title)
    axis.legend(fontsize=8)
    return _png(figure)


def length_histograms(lengths: dict[str, np.ndarray], title: str) -> bytes:
    """Overlaid histograms of solution lengths, one outline per agent."""
    figure, axis = _subplots((7, 4))
    values = np.concatenate([np.asarray(v) for v in lengths.values()])
    bins = np.arange(values.min() - 0.5, values.max() + 1.5)
    for name, clicks in lengths.items():
        axis.hist(clicks, bins=bins, histtype="step", linewidth=2,
                  label=f"{name} (mean {np.mean(clicks):.2f})")
    axis.set_xlabel("clicks to clear the board")
    axis.set_ylabel("boards")
    axis.set_title(title)
    axis.legend(fontsize=8)
    return _png(figure)


def joint_histogram(agent: np.ndarray, reference: np.ndarray, agent_name: str, reference_name: str) -> bytes:
    """2-D histogram of an agent's length against a reference's, with the diagonal: cells
    below it are boards the agent solved in fewer clicks than the reference."""
    figure, axis = _subplots((5.5, 5))
    low = min(agent.min(), reference.min()) - 0.5
    high = max(agent.max(), reference.max()) + 1.5
    bins = np.arange(low, high)
    counts, _, _, image = axis.hist2d(reference, agent, bins=[bins, bins], cmap="viridis", cmin=1)
    figure.colorbar(image, ax=axis, label="boards")
    # Red, not white: the line must show over empty (white) cells too.
    axis.plot([low, high], [low, high], color="tab:red", linewidth=1, linestyle="--", label="equal length")
    axis.legend(loc="upper left", fontsize=8)
    axis.set_xlabel(f"{reference_name} clicks")
    axis.set_ylabel(f"{agent_name} clicks")
    equal = np.mean(agent == reference)
    better = np.mean(agent < reference)
    axis.set_title(f"{agent_name} vs {reference_name}: {equal:.0%} equal, {better:.0%} shorter", fontsize=10)
    return _png(figure)


def learning_curves(curves: dict[str, tuple[np.ndarray, np.ndarray]], references: dict[str, float],
                    title: str, ylabel: str = "mean clicks") -> bytes:
    """A measure of each curve's play (mean clicks by default) against wall-clock minutes,
    with horizontal references."""
    return variant_curves({name: {"": curve} for name, curve in curves.items()}, title, ylabel, references)


def variant_curves(curves: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]], title: str, ylabel: str,
                   references: dict[str, float] | None = None, marks: dict[str, float] | None = None) -> bytes:
    """Several plays of several variants against wall-clock minutes: one colour per variant
    (``curves[variant][play] = (seconds, values)``), one line style per play; ``references``
    are horizontal lines at a value, ``marks`` vertical ones at a second of training."""
    figure, axis = _subplots((8, 4.5) if len(curves) > 4 else (7, 4))
    colours = [f"C{i}" for i in range(10)]
    styles = ["-", "--", ":", "-."]
    plays = list(dict.fromkeys(play for by_play in curves.values() for play in by_play))
    for index, (variant, by_play) in enumerate(curves.items()):
        for play, (seconds, values) in by_play.items():
            axis.plot(np.asarray(seconds) / 60, values, color=colours[index % 10],
                      linestyle=styles[plays.index(play) % 4], marker="o", markersize=3,
                      label=f"{variant}, {play}" if play else variant)
    for name, value in (references or {}).items():
        axis.axhline(value, linestyle=":", linewidth=1, color="grey")
        axis.text(axis.get_xlim()[1], value, f" {name} {value:.2f}", va="center", fontsize=7)
    for name, second in (marks or {}).items():
        axis.axvline(second / 60, linestyle=":", linewidth=1, color="grey")
        axis.text(second / 60, axis.get_ylim()[1], f"{name} ", ha="right", va="top", rotation=90, fontsize=7)
    axis.set_xlabel("minutes of training")
    axis.set_ylabel(ylabel)
    axis.set_title(title)
    axis.legend(fontsize=7, ncol=2)
    return _png(figure)
