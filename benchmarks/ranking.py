"""How well each value function ranks a position's children, on the exact-label ranking set
(``jaxdust.evaluation.ranking``): the hand-made heuristic, its one-click lookahead, and the
value, the value's one-click lookahead and the policy (its clusters' probabilities, no
simulation) of any trained runs, in the same run.

    python benchmarks/ranking.py                              # the references only
    python benchmarks/ranking.py --runs results/avi-default   # and a trained run's value

A value that ranks children worse than its own one-click lookahead (``1 + min`` over the
grandchildren: roughly the backup ``avi`` trains it towards, which uses the target network
and is capped by the search's lines) disagrees with its own one-step backup on these
positions: it has not fitted what it is trained on.
"""

from __future__ import annotations

import argparse
import os

import jaxdust
from jaxdust.core import files, flags, machine
from jaxdust.core.game import GameConfig
from jaxdust.evaluation import ranking
from jaxdust.learn.runs import RunError, load_run, read_run_config
from jaxdust.search.beam import lookahead_heuristic, lookahead_scorer
from jaxdust.search.heuristic import heuristic_scorer


def _number(value: float | None, sign: str = "+") -> str:
    """A table cell: ``-`` for a span of cells left with no child in the set."""
    return "-" if value is None else f"{value:{sign}.2f}"


def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=flags.input_file, default=ranking.RANKING_FILE,
                        help="a ranking set (python -m jaxdust.evaluation.ranking writes one)")
    parser.add_argument("--runs", default="", help="comma-separated train.py run directories")
    parser.add_argument("--newest", action="store_true",
                        help="each run's newest checkpoint, not best/ (selected by greedy play; the policy is "
                             "ranked from it too, one network for every ranking)")
    parser.add_argument("--out", type=flags.report_file("ranking"), default="results/ranking.json")
    args = parser.parse_args(argv)

    if args.set == "-":
        parser.error("--set: must be a file, not standard input")
    try:
        records = ranking.load(args.set)
    except ValueError as error:  # each names the file (and the line)
        flags.fail(parser, f"--set: {error}")
    if not records:
        flags.fail(parser, f"--set: {args.set} holds no positions")
    scorers = {"hand-made heuristic": (heuristic_scorer, None), "heuristic, one-click lookahead": (lookahead_heuristic, None)}
    policies = {}
    given = [os.path.normpath(run) for run in filter(None, args.runs.split(","))]
    if len(set(given)) < len(given):
        flags.fail(parser, "--runs: a run given twice")
    for run in given:
        try:
            size = read_run_config(run)[1].game
            if not size.takes_boards_of(GameConfig()):  # the set's boards
                raise RunError(f"{run} was trained on {size.size_text} boards under the "
                               f"{size.rules} rules; the ranking set holds 8x6x5 dust positions")
            trained = load_run(run, newest=args.newest)
        except RunError as error:
            flags.fail(parser, f"--runs: {error}")
        # The path as given: runs of one name in two folders (learners.py's layout) stay apart.
        label = f"{run}, checkpoint {trained.step}"
        scorers[f"{trained.learner} value ({label})"] = (trained.scorer, trained.params)
        scorers[f"{trained.learner} value, one-click lookahead ({label})"] = (lookahead_scorer(trained.scorer), trained.params)
        if trained.evaluator is not None:
            policies[f"{trained.learner} policy ({label})"] = (trained.evaluator, trained.params)
    report = {"benchmark": "ranking", "measured_on": machine.measured_on(jaxdust.__version__), "set": os.path.abspath(args.set),
              "positions": len(records), "cpu": machine.cpu_name(), "scorers": {}}
    for name, (scorer, params) in scorers.items():
        report["scorers"][name] = ranking.ranking_metrics(ranking.scorer_scores(records, scorer, params), records)
    for name, (evaluator, params) in policies.items():  # a policy ranks clusters; it estimates no clicks
        report["scorers"][name] = ranking.ranking_metrics(ranking.policy_scores(records, evaluator, params), records,
                                                          clicks_left=False)

    files.atomic_write_json(args.out, report)
    buckets = [f"{low}-{high}" for low, high in ranking.CELL_BUCKETS]
    print(f"\n{len(records)} positions of {os.path.relpath(args.set)}\n")
    print("| scorer | top-1 optimal | regret per decision | pairwise | " + " | ".join(f"error, {b} cells" for b in buckets)
          + " | " + " | ".join(f"bias, {b}" for b in buckets) + " |")
    print("|---|---:|---:|---:|" + "---:|" * 2 * len(buckets))
    for name, m in report["scorers"].items():
        errors = " | ".join(_number(m["error_by_cells_left"][b], "") if "error_by_cells_left" in m else "" for b in buckets)
        biases = " | ".join(_number(m["bias_by_cells_left"][b]) if "bias_by_cells_left" in m else "" for b in buckets)
        print(f"| {name} | {m['top1']:.3f} | {m['regret']:.3f} | {m['pairwise']:.3f} | {errors} | {biases} |")
    print("\nSigned error (estimate - exact) of the optimal children / the others, by cells left:\n")
    print("| scorer | " + " | ".join(buckets) + " |")
    print("|---|" + "---:|" * len(buckets))
    for name, m in report["scorers"].items():
        if "bias_of_best_by_cells_left" in m:
            pairs = " | ".join(_number(m["bias_of_best_by_cells_left"][b]) + " / " + _number(m["bias_of_rest_by_cells_left"][b])
                               for b in buckets)
            print(f"| {name} | {pairs} |")
    print(f"\nwrote {args.out}")
    return report


if __name__ == "__main__":
    flags.run_command(main, "nothing was written; run the command again")
