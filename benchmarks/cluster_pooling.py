"""Time of the policy's cluster pooling (``mcts.cluster_log_probs``), against comparing
every cell with every other.

A policy over cells is one over clusters once each cluster's cells are pooled; the learners
call it in every update (forward and backward) and the MCTS prior in every expansion. The
pooling per cluster in one pass over the cells and the pairwise pooling it replaced take the
same random logits on the same random boards in the same run, and must give the same
log-probabilities and gradients (to float32 rounding). Time is one jitted forward and
backward pass over a batch of positions, the median of repeats.

    python benchmarks/cluster_pooling.py                  # 8x6x5 and 16x16x5 boards
    python benchmarks/cluster_pooling.py --sizes 20x20x6 --batches 64,512
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxdust
from jaxdust.core import configs, files, flags, game, machine
from jaxdust.search import mcts


def pairwise_log_probs(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """The pooling before 0.2.78: each cell against every other, ``[..., N, N]``."""
    occupied = labels >= 0
    log_cells = jax.nn.log_softmax(jnp.where(occupied, logits, mcts._MASKED), axis=-1)
    same = (labels[..., :, None] == labels[..., None, :]) & occupied[..., None, :]
    pooled = jax.nn.logsumexp(jnp.where(same, log_cells[..., None, :], -jnp.inf), axis=-1)
    return jnp.where(occupied, pooled, -jnp.inf)


def timed(function, repeats: int, seconds: float) -> float:
    """Median seconds of a call, over ``repeats`` calls or ``seconds`` of them, whichever
    ends first (at least three)."""
    jax.block_until_ready(function())
    times, start = [], time.perf_counter()
    while len(times) < 3 or (len(times) < repeats and time.perf_counter() - start < seconds):
        began = time.perf_counter()
        jax.block_until_ready(function())
        times.append(time.perf_counter() - began)
    return float(np.median(times))


def measure(config, batch: int, seed: int, repeats: int, seconds: float) -> dict:
    """Both poolings on ``batch`` random boards of ``config``: their seconds a pass and
    the largest differences between them."""
    key_boards, key_logits = jax.random.split(jax.random.key(seed))
    labels = jax.vmap(game.cluster_labels)(game.random_boards(key_boards, batch, config)).reshape(batch, -1)
    logits = 3.0 * jax.random.normal(key_logits, labels.shape)
    weights = jax.random.uniform(key_logits, labels.shape)
    row, outputs = {}, {}
    for name, pool in (("pairwise", pairwise_log_probs), ("per cluster", mcts.cluster_log_probs)):
        loss = jax.jit(jax.value_and_grad(
            lambda x, pool=pool: jnp.sum(jnp.where(labels >= 0, weights * pool(x, labels), 0.0))))
        outputs[name] = (jax.jit(pool)(logits, labels), loss(logits)[1])
        row[name] = timed(lambda loss=loss: loss(logits), repeats, seconds)
    occupied = np.asarray(labels >= 0)
    (pairs, pair_gradient), (pooled, pooled_gradient) = outputs["pairwise"], outputs["per cluster"]
    row["log_prob_difference"] = float(np.max(np.abs(np.asarray(pairs - pooled)[occupied]), initial=0.0))
    row["gradient_difference"] = float(np.max(np.abs(np.asarray(pair_gradient - pooled_gradient))))
    if row["log_prob_difference"] > 1e-4 or row["gradient_difference"] > 1e-4:
        raise SystemExit(f"the poolings differ on {config.size_spec} boards: log-probabilities by "
                         f"{row['log_prob_difference']:.3g}, gradients by {row['gradient_difference']:.3g}")
    return row


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=configs.size_list_flag,
                        default=[game.GameConfig(8, 6, 5), game.GameConfig(16, 16, 5)],
                        help="the boards' games, comma-separated WxHxC or RULES:WxHxC (default 8x6x5,16x16x5)")
    parser.add_argument("--batches", type=flags.positive_ints, default=[256, 2048],
                        help="positions a pass, comma-separated (default 256,2048)")
    parser.add_argument("--repeats", type=flags.positive_int, default=20, help="passes timed at most (default 20)")
    parser.add_argument("--seconds", type=flags.positive_float, default=3.0,
                        help="seconds of timed passes at most for each pooling and size, past three (default 3)")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--out", type=flags.report_file("cluster_pooling"), default="results/cluster_pooling.json")
    args = parser.parse_args(argv)

    rows = []
    for config in args.sizes:
        for batch in args.batches:
            row = {"size": config.size_spec, "batch": batch,
                   **measure(config, batch, args.seed, args.repeats, args.seconds)}
            rows.append(row)
            print(f"  {config.size_spec}, {batch} positions: pairwise {row['pairwise'] * 1e3:.2f} ms, "
                  f"per cluster {row['per cluster'] * 1e3:.2f} ms", flush=True)
    report = {"benchmark": "cluster_pooling", "measured_on": machine.measured_on(jaxdust.__version__),
              "seed": args.seed, "results": rows}
    files.atomic_write_json(args.out, report)
    print(f"\nCluster pooling, one forward and backward pass ({machine.cpu_name()}, jax {jax.__version__}, "
          f"{jax.devices()[0].platform}, jaxdust {jaxdust.__version__})\n")
    print("| boards | positions | pairwise ms | per cluster ms | speed-up | largest difference |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['size']} | {row['batch']:,} | {row['pairwise'] * 1e3:.2f} | {row['per cluster'] * 1e3:.2f} "
              f"| {row['pairwise'] / row['per cluster']:.1f}x "
              f"| {max(row['log_prob_difference'], row['gradient_difference']):.1e} |")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    flags.run_command(main, "nothing is kept between calls: the same command measures it all again")
