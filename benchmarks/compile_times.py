"""What the everyday JAX programs cost to compile and to run, in two revisions side by side.

A program's first call traces, lowers and compiles it (what a user waits for once per shape,
and what dominates the test suite); later calls only run it. For each revision (checked out
into a temporary git worktree, as ``compare_solvers.py`` does), a fresh process without
JAX's persistent cache calls each program once, timing the process's CPU seconds (XLA
compiles on several threads), then times warm calls (the fastest of five). Revisions
alternate round by round, and each figure keeps the best round, so machine drift hits both.

    python benchmarks/compile_times.py 67af901 WORKTREE          # the programs below, 2 rounds
    python benchmarks/compile_times.py HEAD~1 HEAD --rounds 3

Programs (8 x 6 x 5 boards): the hand-made heuristic and the solver key on 8,192 positions a
few random clicks in; the beam search at width 8 on 4 boards and at width 64 on 64; one
chunk of 10 ``avi`` updates (64 slots, beams of 4, an MLP of 64 x 64) and of the default
``avi`` (what ``python train.py`` runs); largest-group play on 256 boards; 20 random steps
of ``Dust-8x6x5-v0`` for 4,096 games in lockstep (``jax.vmap(env.step)`` in a scan), without
and with auto-reset (the registered id caps a game at 192 clicks).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from compare_solvers import checked_out, described, main_command, revisions_parser, run_json  # benchmarks/
from jaxdust.core import files, flags, machine
from jaxdust.core.progress import progress_bar

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PROGRAMS = ("heuristic", "solver_key", "beam_w8_4", "beam_w64_64", "avi_chunk", "avi_default", "play_largest_256",
            "env_4096", "env_4096_reset")

# Runs in a fresh interpreter with a revision's source tree first on the path; only public
# entry points that every revision has.
_MEASURE = """
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp
import jaxdust
from jaxdust.core import game
from jaxdust.core.play import play_boards
from jaxdust.evaluation import baselines
from jaxdust.learn import avi
from jaxdust.search import beam, heuristic, keys
assert jaxdust.__file__.startswith(sys.argv[1]), jaxdust.__file__

size = game.GameConfig()
name = sys.argv[2]

def positions():  # 8,192 positions 5 random clicks in
    def one(key):
        board_key, key = jax.random.split(key)
        def click(i, carry):
            board, key = carry
            key, action_key = jax.random.split(key)
            action = game.random_legal_action(action_key, game.legal_action_mask(board).reshape(-1))
            return game.click_action(board, action)[0], key
        return jax.lax.fori_loop(0, 5, click, (game.random_board(board_key, size), key))[0]
    return jax.block_until_ready(jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(0), 8192)))

def evaluation(count):
    return jnp.asarray(np.stack([r.board for r in jaxdust.read_board_file(sys.argv[3], limit=count)]))

def avi_chunk(**small):
    config = avi.AVIConfig(total_updates=100, chunk_updates=10, **small)
    init, run_chunk = avi.make_avi(config)
    runner = jax.block_until_ready(init(jax.random.key(0)))
    return lambda: run_chunk(jax.tree.map(jnp.copy, runner))[1]

# Inputs are made before the clock starts; each call is the program alone.
if name == "heuristic":
    boards, scored = positions(), jax.jit(heuristic.heuristic_scorer)
    call = lambda: scored(boards, None)
elif name == "solver_key":
    boards, keyed = positions(), jax.jit(jax.vmap(keys.solver_key))
    call = lambda: keyed(boards)
elif name == "beam_w8_4":
    boards = evaluation(4)
    call = lambda: beam.beam_search(boards, width=8)
elif name == "beam_w64_64":
    boards = evaluation(64)
    call = lambda: beam.beam_search(boards, width=64)
elif name == "avi_chunk":
    call = avi_chunk(hidden=(64, 64), num_envs=64, beam_width=4, buffer_lines=64)
elif name == "avi_default":
    call = avi_chunk()
elif name.startswith("env_4096"):
    env = jaxdust.make("Dust-8x6x5-v0", auto_reset=name.endswith("_reset"))
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 4096))
    actions = jax.random.randint(jax.random.key(1), (20, 4096), 0, 48)
    def steps(states, actions):
        return jax.lax.scan(lambda s, a: (jax.vmap(env.step)(s, a)[0], None), states, actions)[0].clicks
    stepped = jax.jit(steps)
    call = lambda: stepped(states, actions)
else:
    boards = positions()[:256]
    call = lambda: play_boards(boards, baselines.largest_cluster, jax.random.key(0), 48)
start = time.process_time()
first = jax.block_until_ready(call())
first_cpu = time.process_time() - start
warm = []
for _ in range(5):
    start = time.perf_counter()
    jax.block_until_ready(call())
    warm.append(time.perf_counter() - start)
lengths = first.length.tolist() if hasattr(first, "length") else None
print(json.dumps({"first_call_cpu_s": first_cpu, "warm_ms": 1e3 * min(warm), "lengths": lengths}))
"""


def _measure(source: str, program: str) -> dict:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("JAX_COMPILATION_CACHE")}
    environment["JAX_PLATFORMS"] = "cpu"
    boards = os.path.join(ROOT, "data", "boards", "eval_8x6x5.txt")
    return run_json([sys.executable, "-c", _MEASURE, source, program, boards], environment, source, program)


def main(argv=None) -> dict:
    parser = revisions_parser(__doc__)
    parser.add_argument("--rounds", type=flags.positive_int, default=2)
    parser.add_argument("--programs", type=flags.names(PROGRAMS, "programs"), default=list(PROGRAMS),
                        help=f"comma-separated, of {', '.join(PROGRAMS)}")
    parser.add_argument("--out", type=flags.report_file("compile_times"), default="results/compile_times.json")
    args = parser.parse_args(argv)

    best = {program: [{"first_call_cpu_s": np.inf, "warm_ms": np.inf} for _ in range(2)] for program in args.programs}
    with checked_out(args.old, args.new) as (sources, _):
        with progress_bar(total=args.rounds * len(args.programs) * 2, unit="process", file=sys.stderr) as bar:
            for _ in range(args.rounds):
                for program in args.programs:
                    for v in range(2):
                        record = _measure(sources[v], program)
                        kept = best[program][v]
                        kept["first_call_cpu_s"] = min(kept["first_call_cpu_s"], record["first_call_cpu_s"])
                        kept["warm_ms"] = min(kept["warm_ms"], record["warm_ms"])
                        kept["lengths"] = record["lengths"]
                        bar.update()

    print(f"\nFirst call (trace, lower, compile, one run: CPU seconds of the process) and a warm call "
          f"(fastest of 5), best of {args.rounds} rounds\n")
    print(f"| program | {args.old}: first call s | {args.new}: first call s | new / old | "
          f"{args.old}: warm ms | {args.new}: warm ms | new / old |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    rows = {}
    for program, (old, new) in best.items():
        rows[program] = {"old": old, "new": new, "first_call_ratio": new["first_call_cpu_s"] / old["first_call_cpu_s"],
                         "warm_ratio": new["warm_ms"] / old["warm_ms"],
                         "same_lengths": old["lengths"] == new["lengths"]}
        print(f"| {program} | {old['first_call_cpu_s']:.2f} | {new['first_call_cpu_s']:.2f} | "
              f"{rows[program]['first_call_ratio']:.2f} | {old['warm_ms']:.2f} | {new['warm_ms']:.2f} | "
              f"{rows[program]['warm_ratio']:.2f} |")
    report = {"benchmark": "compile_times", "old": described(args.old), "new": described(args.new),
              "measured_on": machine.measured_on(None), "rounds": args.rounds, "rows": rows}
    files.atomic_write_json(args.out, report)
    print(f"\nwrote {args.out}")
    # Kept, not raised before the write: a change of tie-break is a reason to look, and the
    # timings measured stand.
    for program in (p for p, row in rows.items() if not row["same_lengths"]):
        print(f"{program}: the two revisions' beams found different lengths (timed on different work)", file=sys.stderr)
    return report


if __name__ == "__main__":
    report = main_command(main)
    sys.exit(0 if all(row["same_lengths"] for row in report["rows"].values()) else 1)
