"""PNG figures of solution lengths and learning curves (matplotlib, no display needed)."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator


def _subplots(size: tuple[float, float]):
    """A figure outside pyplot: no display, no global backend change for the caller."""
    figure = Figure(figsize=size)
    return figure, figure.subplots()


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    return buffer.getvalue()


def _colours(count: int) -> list:
    """One colour an agent: matplotlib's ten, or twenty where more agents are drawn (the
    ten repeat from the eleventh)."""
    if count <= 10:
        return [f"C{i}" for i in range(count)]
    return [matplotlib.colormaps["tab20"](i % 20) for i in range(count)]


def _legend(axis, entries: int) -> None:
    """Inside the axes for a few entries; beside them for many, where it would cover bars."""
    if entries > 6:
        axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        axis.legend(fontsize=8)


def _integer_bins(values: np.ndarray, most: int = 40) -> np.ndarray:
    """Bin edges between whole numbers, each bin holding the same count of them (at most
    ``most`` bins): no bin gathers more integers than its neighbours.

    Raises:
      ValueError: no values, or values that are not finite numbers.
    """
    values = np.asarray(values, float)
    if values.size == 0:
        raise ValueError("nothing to draw: no values")
    if not np.isfinite(values).all():
        raise ValueError("cannot draw values that are not finite numbers")
    low, high = int(np.floor(values.min())), int(np.ceil(values.max()))
    width = max(1, -(-(high - low + 1) // most))
    return np.arange(low, high + width + 1, width) - 0.5


MOST_LENGTH_BINS = 60  # a bin a click up to 60 clicks apart; the joint figure's cells grow as its square


def _together(series) -> np.ndarray:
    """Every value of ``series`` (arrays) in one flat array, empty where there are none."""
    arrays = [np.asarray(values, float).ravel() for values in series]
    return np.concatenate(arrays) if arrays else np.zeros(0)


def _outlines(axis, series: dict[str, np.ndarray], bins: np.ndarray, described) -> None:
    """One step outline a series, labelled ``name (described(name, values))``; a series
    whose counts equal an earlier one's is drawn dashed and says whose, as it would
    otherwise hide under it (a solver's lengths under the proven optima): each such
    series its own dashes, longer gaps the later, so a third shows beside a second."""
    drawn: dict[str, np.ndarray] = {}
    for (name, values), colour in zip(series.items(), _colours(len(series))):
        counts = np.histogram(values, bins)[0]
        alike = [other for other, seen in drawn.items() if np.array_equal(seen, counts)]  # drawn before it
        drawn[name] = counts
        axis.hist(values, bins=bins, histtype="step", linewidth=2, color=colour,
                  linestyle=(0, (4, 3 * len(alike))) if alike else "-",
                  label=f"{name} ({described(name, values)}" + (f"; dashed: the same as {alike[0]})" if alike else ")"))


def value_histograms(values: dict[str, np.ndarray], title: str, measure: str, digits: int = 1) -> bytes:
    """Overlaid histograms of a per-board measure (e.g. points), one outline per agent,
    in bins of whole numbers; the legend gives each mean to ``digits`` decimals (as the
    table beside it does)."""
    figure, axis = _subplots((7, 4))
    bins = _integer_bins(_together(values.values()))
    _outlines(axis, values, bins, lambda name, per_board: f"mean {np.mean(per_board):.{digits}f}")
    for line in (axis.xaxis, axis.yaxis):  # whole numbers on both: values and counts of boards
        line.set_major_locator(MaxNLocator(integer=True))
    axis.set_xlabel(measure)
    axis.set_ylabel("boards")
    axis.set_title(title)
    _legend(axis, len(values))
    return _png(figure)


def length_histograms(lengths: dict[str, np.ndarray], title: str,
                      not_cleared: dict[str, int] | None = None) -> bytes:
    """Overlaid histograms of solution lengths, one outline per agent; ``not_cleared``
    counts each agent's boards not cleared, drawn at the click cap (the legend says how
    many)."""
    figure, axis = _subplots((7, 4))
    not_cleared = not_cleared or {}
    bins = _integer_bins(_together(lengths.values()), most=MOST_LENGTH_BINS)
    _outlines(axis, lengths, bins, lambda name, clicks: f"mean {np.mean(clicks):.2f}" + (
        f"; {not_cleared[name]} not cleared, at the cap" if not_cleared.get(name) else ""))
    for line in (axis.xaxis, axis.yaxis):  # whole numbers on both: clicks and counts of boards
        line.set_major_locator(MaxNLocator(integer=True))
    axis.set_xlabel("clicks to clear the board" + (" (a board not cleared: the click cap)" if any(not_cleared.values())
                                                    else ""))
    axis.set_ylabel("boards")
    axis.set_title(title)
    _legend(axis, len(lengths))
    return _png(figure)


def joint_histogram(agent: np.ndarray, reference: np.ndarray, agent_name: str, reference_name: str,
                    agent_cleared: np.ndarray | None = None, reference_cleared: np.ndarray | None = None) -> bytes:
    """2-D histogram of an agent's length against a reference's, with the diagonal: cells
    below it are boards the agent solved in fewer clicks than the reference. A board a
    player did not clear (``*_cleared`` False) sits at the click cap and counts as neither
    equal nor shorter for the agent; the title says how many the agent left."""
    figure, axis = _subplots((5.5, 5))
    bins = _integer_bins(_together([agent, reference]), most=MOST_LENGTH_BINS)  # a cell a click where they fit
    low = bins[0]
    counts, _, _, image = axis.hist2d(reference, agent, bins=[bins, bins], cmap="viridis", cmin=1)
    image.set_clim(0, max(1, np.nanmax(counts)))  # a scale from 0, also where every cell holds one count
    figure.colorbar(image, ax=axis, label="boards", ticks=MaxNLocator(integer=True))
    for line in (axis.xaxis, axis.yaxis):
        line.set_major_locator(MaxNLocator(integer=True))
    # Red, not white: the line must show over empty (white) cells too.
    axis.plot([low, bins[-1]], [low, bins[-1]], color="tab:red", linewidth=1, linestyle="--", label="equal length")
    axis.set_xlim(low, bins[-1])
    axis.set_ylim(low, bins[-1])
    # Lower right: below the line, where an agent would beat the reference, few boards land.
    axis.legend(loc="lower right", fontsize=8)
    axis.set_xlabel(f"{reference_name} clicks")
    axis.set_ylabel(f"{agent_name} clicks")
    axis.set_title(joint_title(agent, reference, agent_name, reference_name, agent_cleared, reference_cleared),
                   fontsize=10)
    return _png(figure)


def joint_title(agent: np.ndarray, reference: np.ndarray, agent_name: str, reference_name: str,
                agent_cleared: np.ndarray | None = None, reference_cleared: np.ndarray | None = None) -> str:
    """``joint_histogram``'s title: the shares of boards the agent cleared in as many clicks
    as the reference (which cleared it too), in fewer (or where the reference did not
    clear it), and those it left."""
    mine = np.ones(np.shape(agent), bool) if agent_cleared is None else np.asarray(agent_cleared, bool)
    theirs = np.ones(np.shape(reference), bool) if reference_cleared is None else np.asarray(reference_cleared, bool)
    equal = np.mean(mine & theirs & (agent == reference))
    better = np.mean(mine & ((agent < reference) | ~theirs))  # cleared where the reference stopped at the cap
    stuck = f", {np.mean(~mine):.0%} not cleared" if not mine.all() else ""
    return f"{agent_name} vs {reference_name}: {equal:.0%} equal, {better:.0%} shorter{stuck}"


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
    colours = _colours(len(curves))
    styles = ["-", "--", ":", "-."]
    plays = list(dict.fromkeys(play for by_play in curves.values() for play in by_play))
    for index, (variant, by_play) in enumerate(curves.items()):
        for play, (seconds, values) in by_play.items():
            axis.plot(np.asarray(seconds) / 60, values, color=colours[index],
                      linestyle=styles[plays.index(play) % 4], marker="o", markersize=3,
                      label=f"{variant}, {play}" if play else variant)
    for name, second in (marks or {}).items():
        axis.axvline(second / 60, linestyle=":", linewidth=1, color="grey")
    for name, value in (references or {}).items():  # at the right edge, wherever the marks took it
        axis.axhline(value, linestyle=":", linewidth=1, color="grey")
        axis.text(1.0, value, f" {name} {value:.2f}", va="center", fontsize=7, transform=axis.get_yaxis_transform())
    for name, second in (marks or {}).items():
        axis.text(second / 60, 1.0, f"{name} ", ha="right", va="top", rotation=90, fontsize=7,
                  transform=axis.get_xaxis_transform())
    axis.set_xlabel("minutes of training")
    axis.set_ylabel(ylabel)
    axis.set_title(title)
    _legend(axis, sum(len(by_play) for by_play in curves.values()))
    return _png(figure)
