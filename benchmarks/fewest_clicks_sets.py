"""Publish the fewest-clicks benchmark sets (``data/boards/fewest_clicks_v1_*.txt``).

    python -m jaxdust.solver data/boards/eval_8x6x5.txt --out results/solver-eval-1000.jsonl --jobs 2 --time-limit 300
    python benchmarks/fewest_clicks_sets.py --solver-log results/solver-eval-1000.jsonl

8x6x5: the 1000 evaluation boards with the solver's lengths and lower bounds from that log
(boards it could not prove within its time keep both, unequal). 6x6x5 and 8x4x5: the
boards of ``optimal_6x6x5.txt`` and ``optimal_8x4x5.txt``, whose optima the solver proved
(``tests/test_solvers.py`` proves them again). A set already published is left alone.
"""

from __future__ import annotations

import os

import numpy as np

from jaxdust.core import boards as board_io
from jaxdust.core import files, flags
from jaxdust.evaluation import benchmark


def main(argv=None) -> None:
    parser = flags.Parser(description=__doc__)
    parser.add_argument("--solver-log", type=flags.input_file, required=True,
                        help="JSON lines of python -m jaxdust.solver on data/boards/eval_8x6x5.txt")
    args = parser.parse_args(argv)

    for size in ("6x6x5", "8x4x5"):
        if not os.path.exists(benchmark.set_path(size)):
            records = board_io.read_board_file(os.path.join(board_io.BOARDS_DIR, f"optimal_{size}.txt"))
            optima = [r.values[-1] for r in records]
            print(benchmark.write_set(size, np.stack([np.asarray(r.board) for r in records]), optima, optima,
                                      "Optima proven by python -m jaxdust.solver."))
    if not os.path.exists(benchmark.set_path("8x6x5")):
        records = board_io.read_board_file(board_io.EVAL_FILE)
        found = {r["board"]: r for r in files.recover_json_lines(args.solver_log, repair=False) if "length" in r}
        texts = [board_io.board_to_text(r.board) for r in records]
        missing = [t for t in texts if t not in found]
        if missing:
            parser.error(f"--solver-log: {len(missing)} of the 1000 boards are not in it yet")
        print(benchmark.write_set("8x6x5", np.stack([np.asarray(r.board) for r in records]),
                                  [found[t]["length"] for t in texts], [found[t]["lower_bound"] for t in texts],
                                  "The boards of eval_8x6x5.txt; python -m jaxdust.solver --time-limit 300."))


if __name__ == "__main__":
    main()
