"""How well a value function ranks a position's children, on positions with exact labels.

Greedy play needs one thing of a value function: among a position's children (one per
distinct cluster), the lowest value should go to a child with the fewest clicks left. The
ranking set holds positions from optimal, greedy (hand-made heuristic) and random lines of
held-out random boards, each with the exact cost-to-go of *every* child, proven by
``jaxdust.solve`` under node limits (so the file depends on the command alone, not on the
machine). ``ranking_metrics`` scores any scorer on it:

- top-1: share of positions whose best-scored child is optimal;
- regret: mean extra clicks of that child over the best one (per decision);
- pairwise: share of child pairs with different exact values that the scores order rightly;
- error by cells left: mean |score - exact| for scorers that estimate clicks left.

    python -m jaxdust.evaluation.ranking --boards 40 --out data/ranking/ranking_8x6x5.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import files, flags, game, reference
from jaxdust.core.boards import BOARDS_DIR, board_to_text, parse_board
from jaxdust.core.files import is_stream, recover_json_lines
from jaxdust.core.progress import progress_bar
from jaxdust.search.heuristic import Scorer, heuristic_scorer
from jaxdust.search.mcts import cluster_prior
from jaxdust.solver.api import MAX_TABLE_BITS, TranspositionTable, solve

RANKING_FILE = os.path.join(os.path.dirname(BOARDS_DIR), "ranking", "ranking_8x6x5.jsonl")
CELL_BUCKETS = ((0, 12), (13, 24), (25, 36), (37, 48))
SEED_BASE = 7_000_000  # held-out boards: keys SEED_BASE + i, used for nothing else


def actions_of(board: np.ndarray) -> list[int]:
    """One flat action ``x * height + y`` per distinct cluster (its first cell), increasing."""
    labels = np.asarray(game.cluster_labels(jnp.asarray(board, game.BOARD_DTYPE))).reshape(-1)
    return [int(a) for a in np.flatnonzero(labels == np.arange(labels.size))]


def child_of(board: np.ndarray, action: int) -> np.ndarray:
    height = board.shape[1]
    return reference.click(np.asarray(board), action // height, action % height)[0]


RECORD_KEYS = ("board", "actions", "child_values")


def _is_record(record) -> bool:
    return isinstance(record, dict) and all(key in record for key in RECORD_KEYS)


def load(path: str = RANKING_FILE) -> list[dict]:
    """The records of a ranking set (JSON lines, as ``main`` writes them); ValueError naming
    the first line that is not one."""
    records, lines = [], files.read_lines(path, "ranking set")
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                record = json.loads(line)
            except ValueError as error:  # its position counts within the line
                torn = "; a torn last line?" if number == len(lines) and number > 1 else ""
                raise ValueError(f"{path}:{number} is not JSON ({error}){torn}") from None
            if not _is_record(record):
                raise ValueError(f"{path}:{number} is not a ranking record (it needs {', '.join(RECORD_KEYS)})")
            records.append(record)
    return records


def children(record: dict, width: int = 8, height: int = 6) -> np.ndarray:
    """int8 ``[K, W, H]``, the record's children in the order of its actions."""
    board = np.asarray(parse_board(record["board"], width, height))
    return np.stack([child_of(board, a) for a in record["actions"]]).astype(np.int8)


# ---------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------


def scorer_scores(records: list[dict], scorer: Scorer, params=None) -> list[np.ndarray]:
    """Each record's children scored by ``scorer`` (0 for an empty child), padded to one
    batch shape so the scorer compiles once."""
    score = jax.jit(scorer)
    out = []
    for record in records:
        kids = children(record)
        padded = np.zeros((48, *kids.shape[1:]), np.int8)
        padded[: len(kids)] = kids
        values = np.asarray(score(jnp.asarray(padded), params))[: len(kids)]
        out.append(np.where(kids.reshape(len(kids), -1).any(axis=1), values, 0.0))
    return out


def policy_scores(records: list[dict], evaluator, params, width: int = 8, height: int = 6) -> list[np.ndarray]:
    """Each record's children scored by minus the log-probability a policy gives their
    cluster (lower is better, as ``ranking_metrics`` wants). ``evaluator(boards, params)``
    returns clicks left and click logits ``[N, W * H]`` (``jaxdust.search.mcts``)."""
    boards = jnp.asarray(np.stack([parse_board(record["board"], width, height) for record in records]))
    _, logits = jax.jit(evaluator)(boards, params)
    log_probs = np.asarray(cluster_prior(boards, logits)[0])  # the records' actions are clusters' first cells
    return [-log_probs[i][record["actions"]] for i, record in enumerate(records)]


def ranking_metrics(scores: list[np.ndarray], records: list[dict], clicks_left: bool = True) -> dict:
    """Top-1, regret and pairwise accuracy of ``scores`` (per record, per child, lower is
    better; ties go to the lowest action), and with ``clicks_left``, by the child's cells
    left: the mean absolute error, the mean signed error (estimate - exact: above 0,
    pessimistic), and the signed error apart for the optimal children (``best``) and the
    others (``rest``): a scorer that overrates the best children's clicks left more than
    the rest's misses the moves whose payoff comes later."""
    if not records:  # an empty ranking set (ranking.load reads one as no records)
        raise ValueError("no ranking records to score (is the ranking set empty?)")
    if len(scores) != len(records):  # zip would score the first records and divide by all of them
        raise ValueError(f"{len(scores)} score lists for {len(records)} ranking records: give one a record")
    for index, (score, record) in enumerate(zip(scores, records)):
        if np.shape(score) != (len(record["child_values"]),):
            raise ValueError(f"record {index} has {len(record['child_values'])} children and {np.size(score)} "
                             "scores: give one score a child")
    top1 = regret = ordered = pairs = 0.0
    errors: dict[tuple[int, int], list[tuple[float, bool]]] = {bucket: [] for bucket in CELL_BUCKETS}
    # (estimate - exact, child is optimal) by cells left
    for score, record in zip(scores, records):
        score, exact = np.asarray(score, float), np.asarray(record["child_values"], float)
        chosen = int(np.argmin(score))
        top1 += exact[chosen] == exact.min()
        regret += exact[chosen] - exact.min()
        better = exact[:, None] < exact[None, :]  # each pair with different values once
        pairs += better.sum()
        difference = score[:, None] - score[None, :]
        ordered += np.sum(difference[better] < 0) + 0.5 * np.sum(difference[better] == 0)
        if clicks_left:
            for kid, estimate, value in zip(children(record), score, exact):
                cells = int((kid != 0).sum())
                for low, high in CELL_BUCKETS:
                    if low <= cells <= high:
                        errors[(low, high)].append((estimate - value, value == exact.min()))
    count = len(records)
    result: dict[str, Any] = {"positions": count, "top1": top1 / count, "regret": regret / count,
                              "pairwise": ordered / max(pairs, 1)}
    if clicks_left:
        def by_bucket(statistic, keep=lambda optimal: True) -> dict:
            picked = {bucket: [error for error, optimal in rows if keep(optimal)] for bucket, rows in errors.items()}
            return {f"{low}-{high}": float(statistic(picked[(low, high)])) if picked[(low, high)] else None
                    for low, high in CELL_BUCKETS}

        result["error_by_cells_left"] = by_bucket(lambda e: np.mean(np.abs(e)))
        result["bias_by_cells_left"] = by_bucket(np.mean)
        result["bias_of_best_by_cells_left"] = by_bucket(np.mean, lambda optimal: optimal)
        result["bias_of_rest_by_cells_left"] = by_bucket(np.mean, lambda optimal: not optimal)
    return result


# ---------------------------------------------------------------------------------------
# Making the set
# ---------------------------------------------------------------------------------------


def _line(board: np.ndarray, choose) -> list[np.ndarray]:
    line = [board]
    while line[-1].any():
        actions = actions_of(line[-1])
        line.append(child_of(line[-1], actions[choose(line[-1], actions)]))
    return line


def _greedy_choice(board, actions):
    kids = np.stack([child_of(board, a) for a in actions]).astype(np.int8)
    scores = np.asarray(jax.jit(heuristic_scorer)(jnp.asarray(kids)))
    return int(np.argmin(np.where(kids.reshape(len(kids), -1).any(axis=1), scores, -np.inf)))


def label_position(position: np.ndarray, colors: int, node_limit: int) -> tuple[list[int], list[int]] | None:
    """Actions and exact child values, or None when a child is not proven within the limit."""
    table = TranspositionTable(22, MAX_TABLE_BITS)  # entries are facts: shared by the children
    actions, values = actions_of(position), []
    for action in actions:
        kid = child_of(position, action)
        if not kid.any():
            values.append(0)
            continue
        result = solve(kid, node_limit=node_limit, colors=colors, table=table)
        if not result.optimal:
            return None
        values.append(result.length)
    return actions, values


def board_records(index: int, node_limit: int, per_line: int = 2, seed_base: int = SEED_BASE) -> list[dict]:
    """The labelled positions of held-out board ``index`` (8x6, 5 colours)."""
    size = game.GameConfig()
    board = np.asarray(game.random_board(jax.random.key(seed_base + index), size), np.int64)
    # Its lines and depths are drawn from seed_base too (the shipped set's, SEED_BASE, from
    # the index alone, as when it was made), so that held-out sets of other bases differ.
    rng = np.random.default_rng(index if seed_base == SEED_BASE else (seed_base, index))
    lines = {}
    root = solve(board, node_limit=4 * node_limit, colors=size.colors)
    if root.optimal:
        line = [board]
        for x, y in root.clicks:
            line.append(reference.click(line[-1], x, y)[0])
        lines["optimal"] = line
    lines["greedy"] = _line(board, _greedy_choice)
    lines["random"] = _line(board, lambda b, actions: int(rng.integers(len(actions))))
    picks = [("optimal" if "optimal" in lines else "greedy", 0)] if rng.random() < 0.3 else []
    for source in ("optimal", "greedy", "random"):
        if source in lines:  # depths favouring the early (hard) positions, never the empty end
            depths = np.floor((len(lines[source]) - 1) * rng.random(per_line) ** 1.5).astype(int)
            picks += [(source, int(d)) for d in sorted(set(depths))]
    records, seen = [], set()
    for source, depth in picks:
        position = lines[source][depth]
        text = board_to_text(position)
        if text in seen or len(actions_of(position)) < 2:
            continue
        seen.add(text)
        labelled = label_position(position, size.colors, node_limit)
        if labelled is not None:
            actions, values = labelled
            records.append({"board": text, "source": source, "board_index": index, "depth": depth,
                            "value": 1 + min(values), "actions": actions, "child_values": values,
                            "node_limit": node_limit})
    return records


def build_parser() -> argparse.ArgumentParser:
    """``python -m jaxdust.evaluation.ranking``'s command line (docs/cli.md shows its ``--help``)."""
    parser = flags.Parser(prog="python -m jaxdust.evaluation.ranking", description=__doc__,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=flags.positive_int, default=40,
                        help="held-out boards to draw positions from (default %(default)s)")
    parser.add_argument("--out", type=flags.output_file, required=True,
                        help=f"JSON lines; an existing file is extended (the set shipped: {RANKING_FILE})")
    parser.add_argument("--node-limit", type=flags.positive_int, default=6_000_000,
                        help="positions per child proof (default %(default)s; each record keeps it, and an "
                             "existing --out is extended only under the limit its records name: one made before "
                             "0.2.46, which names none, is not extended)")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    # Two runs on one file would each start after its last board and write the same boards.
    out = files.open_to_append_alone(args.out)
    if out is None:
        flags.fail(parser, f"another ranking run is writing --out {args.out}: let it finish (or stop it; a run "
                           "resumes), or give this one another --out")
    with out:
        return _extend(parser, args, out)


def _check_written_here(records: list) -> None:
    """ValueError unless every record is one ``board_records`` writes: the resume counts
    boards by their ``board_index`` and keeps one ``node_limit`` a file."""
    for record in records:
        if not _is_record(record) or "board_index" not in record:
            raise ValueError("not a ranking record")
        if not game.is_integer(record["board_index"]) or record["board_index"] < 0:
            raise ValueError("a board_index that is not a non-negative integer")
        limit = record.get("node_limit")
        if limit is not None and (not game.is_integer(limit) or limit < 1):
            raise ValueError("a node_limit that is not a positive integer")


def _extend(parser, args, out) -> int:
    """``main`` with ``--out`` held: the boards after the last one in it, each written whole."""
    try:
        # checked before the repair, which would first cut another program's torn last line
        previous = recover_json_lines(args.out, check=_check_written_here)
    except ValueError:
        flags.fail(parser, f"--out {args.out} is not a ranking file this program wrote")
    done = {r["board_index"] for r in previous}
    # A child whose proof does not end within the limit is left out: one set, one limit.
    limits = {r.get("node_limit") for r in previous}
    start = max(done) + 1 if done else 0  # boards are written whole and in order
    if start < args.boards and None in limits:
        flags.fail(parser, f"--out {args.out} holds records that name no --node-limit (made before jaxdust 0.2.46), "
                           "so the limit of its boards is unknown: extend it only by adding the limit it was made "
                           "under to each record (\"node_limit\"), or write another --out")
    if start < args.boards and limits - {None, args.node_limit}:
        made = ", ".join(map(str, sorted(limits - {None})))
        flags.fail(parser, f"--out {args.out} was made under --node-limit {made}, and this call gives "
                           f"{args.node_limit}: give the same limit, or another --out")
    kept = list(previous)
    for index in progress_bar(range(start, args.boards), initial=start, total=args.boards, unit="board"):
        records = board_records(index, args.node_limit)
        # One write a board: a kill between two of its records would leave part of a
        # board, and the resume starts after the last board in the file.
        with files.errors_named(args.out):
            out.write("".join(json.dumps(record) + "\n" for record in records))
            out.flush()
        kept += records
    drawn = max(args.boards, start)  # the file may hold more boards than asked
    labelled = len({record["board_index"] for record in kept})  # a board none of whose positions proved writes none
    # Written to a stream (--out /dev/stdout), the records are the output: the count goes beside them.
    print(f"{args.out}: {len(kept)} labelled position{'s' if len(kept) != 1 else ''} from {drawn} "
          f"board{'s' if drawn != 1 else ''}" + (f" ({labelled} with any)" if labelled != drawn else ""),
          file=sys.stderr if is_stream(args.out) else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(flags.run_command(main, "the same command goes on from the boards written (each is written whole)"))
