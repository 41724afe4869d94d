"""Estimated GPU figures from XLA's own cost analysis, for when no GPU is at hand.

    python benchmarks/gpu_estimate.py            # H100 SXM figures: 3.35 TB/s, 67 TFLOP/s fp32, 80 GB

For three programs (a batched environment step with random legal clicks and auto-reset,
one expansion of a width-2000 beam on one board, one update of the default value learner
``avi``) it compiles the program on this machine and reads XLA's cost analysis (flops and
bytes accessed) and memory analysis (arguments, outputs, temporaries). XLA counts a loop's
body once, whatever its trip count, so the two data-dependent loops of the game core (the
flood fill of a click, the label propagation that finds clusters) are replaced for the
analysis by the measured number of passes, unrolled: on a batch, such a loop runs as many
passes as its slowest element needs, so the count is the batch's maximum, measured on
random positions (for the env step at the same batch size; for the beam and the learner
at the number of positions expanded per step, though their children come in larger
batches). The beam's chunked loops over children are loops as well, so the analysis runs
each as one chunk of exactly the children random positions have. Integer work counts as flops. The roofline bound is then
``time >= max(flops / peak flops, bytes / memory bandwidth)``, and the largest batch is
the memory per game divided into the GPU's whole memory (JAX preallocates 75% of it by
default, so a process fits about three quarters of that batch unless
``XLA_PYTHON_CLIENT_MEM_FRACTION`` is raised). These are **estimates**, not bounds: real kernels reach a fraction of the
roofline, but a GPU compiler fuses differently from the CPU one whose analysis this is and
may move fewer bytes (measured on an H200, the env step and the width-2000 beam beat them;
docs/results.md).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

import jaxdust
from jaxdust.core import configs, files, flags, game, machine
from jaxdust.learn import avi
from jaxdust.core.env import tree_bytes
from jaxdust.search import beam, keys
from jaxdust.search.heuristic import heuristic_scorer

# An H100 SXM5's datasheet: 3.35 TB/s of HBM3, 67 TFLOP/s fp32 without tensor cores, 80 GB.
GPU = {"name": "H100 SXM (80 GB)", "bandwidth": 3.35e12, "flops": 67e12, "memory": 80e9}


@contextlib.contextmanager
def _fixed_point(replacement):
    """Trace the game core with ``game._fixed_point`` replaced."""
    original = game._fixed_point
    game._fixed_point = replacement
    jax.clear_caches()  # jitted callees (beam_search, run_chunk) would reuse old traces
    try:
        yield
    finally:
        game._fixed_point = original
        jax.clear_caches()


def _counting(passes: list):
    """A fixed point that appends the passes it ran (each element's, under vmap) to
    ``passes`` as it runs: a callback, since the game's public functions are jitted and a
    tracer kept at trace time would escape their traces."""

    def counting(update, start, passes_per_check=1):  # the check interval adds at most one pass: ignored
        def changed(carry):
            return jnp.any(carry[0] != carry[1])

        def step(carry):
            return carry[1], update(carry[1]), carry[2] + 1

        _, result, count = jax.lax.while_loop(changed, step, (~start, start, jnp.int32(0)))
        jax.debug.callback(lambda ran: passes.append(int(np.max(ran))), count)
        return result

    return counting


def _unrolled(passes: int):
    """A fixed point of exactly ``passes`` updates, unrolled, so the cost analysis counts
    every pass."""

    def fixed(update, start, passes_per_check=1):
        value = start
        for _ in range(passes):
            value = update(value)
        return value

    return fixed


def _batch_max_passes(function, inputs) -> int:
    """Passes of the slowest element of the batch ``inputs`` for the fixed point of
    ``function``, i.e. what the batched loop runs. (A ``custom_vmap`` function such as
    ``game.cluster_labels`` runs one loop for the whole batch: its count is that maximum.)"""
    passes: list = []
    with _fixed_point(_counting(passes)):
        jax.block_until_ready(jax.jit(jax.vmap(function))(inputs))
        jax.effects_barrier()
    if not passes:
        raise ValueError("ran no fixed point")
    return max(passes)


def _analyse(function, *args, passes: int, donate: bool = False) -> tuple[float, float, float]:
    """XLA's flops, bytes accessed and memory (arguments + outputs + temporaries, less the
    outputs that reuse donated arguments) of ``jit(function)(*args)`` with every fixed
    point run ``passes`` times."""
    with _fixed_point(_unrolled(passes)):
        donated = tuple(range(len(args))) if donate else ()
        compiled = jax.jit(lambda *a: function(*a), donate_argnums=donated).lower(*args).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    memory = compiled.memory_analysis()
    total = (memory.argument_size_in_bytes + memory.output_size_in_bytes + memory.temp_size_in_bytes
             - memory.alias_size_in_bytes)
    return float(cost["flops"]), float(cost["bytes accessed"]), float(total)


def random_positions(count: int, size: game.GameConfig, seed: int, clicks: int = 24):
    """``count`` positions of random legal play (0 to ``clicks`` clicks from a fresh board)."""
    keys = jax.random.split(jax.random.key(seed), count)

    def play(key):
        board_key, depth_key, key = jax.random.split(key, 3)
        depth = jax.random.randint(depth_key, (), 0, clicks + 1)

        def click(i, carry):
            board, key = carry
            key, action_key = jax.random.split(key)
            legal = game.legal_action_mask(board, size.rules).reshape(-1)
            played, _ = game.click_action(board, game.random_legal_action(action_key, legal), size.rules)
            return jnp.where((i < depth) & jnp.any(legal), played, board), key

        return jax.lax.fori_loop(0, clicks, click, (game.random_board(board_key, size), key))[0]

    return jax.jit(jax.vmap(play))(keys)


def env_step(batch: int, size: game.GameConfig, seed: int) -> dict:
    """One random legal click in each of ``batch`` games, auto-reset on (what
    benchmarks/env_throughput.py times)."""
    env = jaxdust.DustEnv(game=size, auto_reset=True)
    states, _ = jax.vmap(env.reset)(jax.random.split(jax.random.key(seed), batch))

    def random_click(state):
        key, action_key = jax.random.split(state.key)
        action = game.random_legal_action(action_key, game.legal_action_mask(state.board, size.rules).reshape(-1))
        return env.step(state.replace(key=key), action)[0]

    positions = jax.vmap(lambda board: env.init(jax.random.key(0), board))(random_positions(batch, size, seed))
    flood = _batch_max_passes(random_click, positions)
    flops, accessed, memory = _analyse(jax.vmap(random_click), states, passes=flood)
    return {"program": f"env step, {size.size_spec}", "item": "click", "batch": batch,
            "passes": flood, "flops": flops, "bytes": accessed, "memory": memory,
            "state_bytes": env.state_bytes()}


def beam_expansion(width: int, size: game.GameConfig, seed: int) -> dict:
    """One click of a width-``width`` beam with the lookahead rescorer (benchmarks/beam.py's
    JAX row): every cluster of ``width`` positions played and scored, the solver keys of
    the ``2 * LOOKAHEAD_SHORTLIST * width`` best, then the lookahead over
    ``LOOKAHEAD_SHORTLIST * width`` of them. The chunked loops run as one chunk of exactly
    the children that random positions have, so the analysis counts the work once per child
    (the selection in between is left out: small; so is all but one pass of the key's
    loop over colours, a few percent of a child's work). The list's codes are counted twice
    (``for_each_child`` makes a chunk's codes before the loop and again inside it): a
    binary search and a rank a child, small beside its contraction."""
    positions = random_positions(width, size, seed)
    listed = random_positions(beam.LOOKAHEAD_SHORTLIST * width, size, seed + 1)
    labels = max(_batch_max_passes(game.cluster_labels, positions), _batch_max_passes(game.cluster_labels, listed))

    def children_of(boards):
        flat = jax.vmap(game.cluster_labels)(boards).reshape(boards.shape[0], -1)
        return int(jnp.sum(flat == jnp.arange(size.num_cells)))

    expanded, looked = children_of(positions), children_of(listed)

    def expansion(positions, listed):
        def visit(total, start, children, parent, action, valid):
            return total + jnp.sum(jnp.where(valid, heuristic_scorer(children), jnp.inf))

        alive = jnp.ones(positions.shape[0], bool)
        flat = jax.vmap(game.cluster_labels)(positions).reshape(positions.shape[0], -1)
        scored = beam.for_each_child(positions, flat, alive, expanded, visit, jnp.float32(0))[1]
        keyed = jax.vmap(keys.solver_key)(jnp.concatenate([listed, listed]))
        return (scored + jnp.sum(beam.lookahead_scorer(heuristic_scorer, chunk=looked)(listed))
                + jnp.sum(keyed[:, 0]).astype(jnp.float32))

    flops, accessed, memory = _analyse(expansion, positions, listed, passes=labels)
    return {"program": f"beam expansion, width {width}, lookahead", "item": "expansion", "batch": 1,
            "passes": labels, "children": expanded + looked, "flops": flops, "bytes": accessed,
            "memory": memory, "state_bytes": width * size.num_cells * (1 + 4 + 8)}  # boards, labels, parent and move logs


def training_update(config: avi.AVIConfig, seed: int, label: str = "") -> dict:
    """One update of ``train.py avi``'s learner with ``config`` (a chunk of one iteration)."""
    config = dataclasses.replace(config, chunk_updates=1)
    init, run_chunk = avi.make_avi(config)
    runner = init(jax.random.key(seed))
    positions = random_positions(config.num_envs + config.capped_positions, config.game, seed)
    labels = _batch_max_passes(game.cluster_labels, positions)
    flops, accessed, memory = _analyse(run_chunk, runner, passes=labels, donate=True)
    label = label or f"{config.num_envs} slots, MLP {list(config.hidden)}"
    return {"program": f"avi update ({label})", "item": "update",
            "batch": 1, "passes": labels, "flops": flops, "bytes": accessed, "memory": memory,
            "state_bytes": tree_bytes(runner), "per_batch": False}


def bounds(estimate: dict) -> dict:
    """The roofline rate and the largest batch in the GPU's memory."""
    compute, transfer = estimate["flops"] / GPU["flops"], estimate["bytes"] / GPU["bandwidth"]
    per_item = estimate["memory"] / estimate["batch"]
    largest = int(GPU["memory"] // per_item) if estimate.get("per_batch", True) else None
    return {**estimate, "bound": "memory" if transfer > compute else "compute",
            "roofline_per_s": estimate["batch"] / max(compute, transfer),
            "memory_per_item": per_item, "largest_batch": largest}


def avi_variants() -> dict[str, dict]:
    """``benchmarks/equal_time.py``'s avi variants that change something (the default's row
    is always there): name -> the settings they change."""
    import equal_time  # a sibling script, on sys.path when this one runs as a script

    return {name: changes for name, (learner, changes, _) in equal_time.VARIANTS.items() if learner == "avi" and changes}


def _avi_variants(text: str) -> list[str]:
    return flags.names(avi_variants(), "avi variants")(text)


def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-batches", type=flags.positive_ints, default=[1024, 65536, 1048576],
                        help="games per env step to analyse (comma-separated)")
    parser.add_argument("--sizes", type=configs.size_list_flag, default=[game.GameConfig()],
                        help="board sizes for the env rows, WxHxC or RULES:WxHxC, comma-separated")
    parser.add_argument("--beam-width", type=flags.positive_int, default=2000)
    parser.add_argument("--avi-variants", type=_avi_variants, default=[],
                        help="also the update of these avi variants of benchmarks/equal_time.py, comma-separated "
                             "(e.g. wide,deep,cell-wide,many-boards: its --set scale)")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--out", type=flags.report_file("gpu_estimate"), default="results/gpu_estimate.json")
    args = parser.parse_args(argv)

    rows = []
    for size in args.sizes:
        for batch in args.env_batches:
            rows.append(bounds(env_step(batch, size, args.seed)))
    rows.append(bounds(beam_expansion(args.beam_width, game.GameConfig(), args.seed)))
    rows.append(bounds(training_update(avi.AVIConfig(), args.seed)))
    variants = avi_variants() if args.avi_variants else {}
    for name in args.avi_variants:
        changes = variants[name]
        rows.append(bounds(training_update(dataclasses.replace(avi.AVIConfig(), **changes), args.seed,
                                           f"variant {name}: {', '.join(f'{k}={v}' for k, v in changes.items())}")))

    print(f"ESTIMATES, not measurements: XLA cost analysis of the CPU-compiled programs "
          f"(jax {jax.__version__}, {machine.cpu_name()}), roofline for an {GPU['name']}: "
          f"{GPU['bandwidth'] / 1e12:.2f} TB/s, {GPU['flops'] / 1e12:.0f} TFLOP/s fp32")
    print("| program | batch | loop passes | flops per item | bytes per item | bound | roofline items/s | "
          "memory per item | largest batch in 80 GB |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for row in rows:
        largest = "-" if row["largest_batch"] is None else f"{row['largest_batch']:,}"
        print(f"| {row['program']} | {row['batch']:,} | {row['passes']} | {row['flops'] / row['batch']:,.0f} | "
              f"{row['bytes'] / row['batch']:,.0f} | {row['bound']} | {row['roofline_per_s']:,.3g} {row['item']}s | "
              f"{row['memory_per_item']:,.0f} B | {largest} |")
    report = {"benchmark": "gpu_estimate", "estimate": True, "measured_on": machine.measured_on(jaxdust.__version__), "gpu": GPU,
              "jax": jax.__version__, "rows": rows}
    files.atomic_write_json(args.out, report)
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    flags.run_command(main, "nothing was written; run the command again")
