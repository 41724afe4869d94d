"""Clicks per second of batched random legal play, against the NumPy reference.

Each game clicks a uniformly random legal cell every step (any occupied cell in the dust
game); finished games restart on a
fresh random board (``DustEnv(auto_reset=True)``). The loop is ``jit`` + ``vmap`` +
``lax.scan``; with several devices (one per CPU core by default) the batch is split with
``shard_map`` so every device plays its share. The NumPy reference (plain loops, from
``jaxdust.core.reference``) plays the same way in the same run, so the ratio survives a noisy
machine.

    python benchmarks/env_throughput.py                 # full table, 1 to 65,536 games
    python benchmarks/env_throughput.py --quick         # a smaller sweep
    python benchmarks/env_throughput.py --batch-sizes 16384 --ids SameGame-15x15x5-v0,Dust-8x6x5-v0

The per-id table plays every registered id (each rule set and size) at one batch size
beside the dust game's 8x6x5 in the same run.
"""

from __future__ import annotations

import argparse
import os
import time

# One XLA host device per core this process may run on (its affinity, as
# machine.cpu_cores: that module cannot be imported before JAX), so a CPU run can use them
# all and a pinned one runs no two devices on a core; GPUs are unaffected.
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={_CORES}"
    ).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import PartitionSpec  # noqa: E402

import jaxdust
from jaxdust.core import files, flags, game, machine, reference

FULL_SWEEP = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536]
QUICK_SWEEP = [1, 64, 1024, 4096, 16384]


def numpy_reference_rate(config: game.GameConfig, seconds: float, seed: int) -> float:
    """Clicks per second of the plain-loop reference playing random legal clicks."""
    rng = np.random.default_rng(seed)
    board = reference.random_board(rng, config.width, config.height, config.colors)
    clicks, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(200):
            if reference.is_done(board):
                board = reference.random_board(rng, config.width, config.height, config.colors)
            occupied = np.argwhere(board != 0)
            x, y = occupied[rng.integers(len(occupied))]
            board, _ = reference.click(board, int(x), int(y))
            clicks += 1
    return clicks / (time.perf_counter() - start)


def make_play(env: jaxdust.DustEnv, num_steps: int, devices: list):
    """A jitted ``(states, key) -> (states, episodes)`` playing ``num_steps`` random clicks
    in every game; with several devices each plays its slice of the batch."""

    def play_local(states, key):
        if len(devices) > 1:  # a different stream per device
            key = jax.random.fold_in(key, jax.lax.axis_index("games"))
        num_games = states.board.shape[0]

        def one_step(states, step_key):
            masks = jax.vmap(lambda board: game.legal_action_mask(board, env.game.rules))(states.board)
            masks = masks.reshape(num_games, -1)
            actions = jax.vmap(game.random_legal_action)(jax.random.split(step_key, num_games), masks)
            states, timestep = jax.vmap(env.step)(states, actions)
            return states, jnp.sum(timestep.last(), dtype=jnp.int32)

        states, episodes = jax.lax.scan(one_step, states, jax.random.split(key, num_steps))
        episodes = episodes.sum()
        return states, jax.lax.psum(episodes, "games") if len(devices) > 1 else episodes

    if len(devices) == 1:
        return jax.jit(play_local)
    mesh = jax.make_mesh((len(devices),), ("games",), devices=devices)
    games, shared = PartitionSpec("games"), PartitionSpec()
    return jax.jit(
        jax.shard_map(play_local, mesh=mesh, in_specs=(games, shared), out_specs=(games, shared))
    )


def measure(env, num_games: int, devices: list, min_clicks: int, repeats: int, seed: int,
            max_steps: int | None = None) -> dict:
    """Random play of ``num_games`` games, at least ``min_clicks`` clicks a timed call (at
    least 8 steps, at most ``max_steps``); the median of ``repeats`` calls after a first."""
    num_steps = max(8, -(-min_clicks // num_games))
    num_steps = min(num_steps, max_steps) if max_steps else num_steps
    play = make_play(env, num_steps, devices)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(seed), num_games))
    if len(devices) > 1:
        mesh = jax.make_mesh((len(devices),), ("games",), devices=devices)
        states = jax.device_put(states, jax.sharding.NamedSharding(mesh, PartitionSpec("games")))
    compile_start = time.perf_counter()
    states, episodes = jax.block_until_ready(play(states, jax.random.key(seed + 1)))
    compile_seconds = time.perf_counter() - compile_start
    times = []
    for repeat in range(repeats):
        start = time.perf_counter()
        states, episodes = jax.block_until_ready(play(states, jax.random.key(seed + 2 + repeat)))
        times.append(time.perf_counter() - start)
    seconds = float(np.median(times))
    clicks = num_games * num_steps
    return {
        "games": num_games,
        "devices": len(devices),
        "steps_per_call": num_steps,
        "clicks_per_second": clicks / seconds,
        "seconds_per_call": seconds,
        "first_call_seconds": compile_seconds,
        "episodes_finished_in_last_call": int(episodes),
    }


def id_table(args, all_devices, numpy_rates: dict) -> list[dict]:
    """Every registered id (rule sets and sizes) at one batch size, every device, beside the
    dust game's 8x6x5 in the same run (and the NumPy reference for the dust ids: of its
    size, from ``numpy_rates`` by config where measured already, as the headline's is)."""
    rows = []
    devices = all_devices if args.id_games % len(all_devices) == 0 else all_devices[:1]
    for env_id in args.ids:
        env = jaxdust.make(env_id, auto_reset=True)
        row = measure(env, args.id_games, devices, args.min_clicks, args.repeats, args.seed)
        if env.game.rules == "dust" and env.game not in numpy_rates:
            numpy_rates[env.game] = numpy_reference_rate(env.game, args.reference_seconds, args.seed)
        numpy_rate = numpy_rates.get(env.game)
        rows.append({"id": env_id, "rules": env.game.rules, "cells": env.game.num_cells,
                     "state_bytes_per_game": env.state_bytes(), "clicks_per_second": row["clicks_per_second"],
                     "numpy_clicks_per_second": numpy_rate,
                     "speedup_vs_numpy": row["clicks_per_second"] / numpy_rate if numpy_rate else None,
                     "games": args.id_games, "devices": len(devices)})
        print(f"  {env_id}: {row['clicks_per_second']:,.0f} clicks/s", flush=True)
    reference = next((r for r in rows if r["id"] == "Dust-8x6x5-v0"), None)
    for r in rows:
        r["vs_dust_8x6x5"] = r["clicks_per_second"] / reference["clicks_per_second"] if reference else None
    if rows:
        print(f"\nBy registered id ({args.id_games:,} games, {rows[0]['devices']} device(s)):")
        print("| id | cells | clicks/s | / Dust-8x6x5-v0's | NumPy reference clicks/s (its size) | x NumPy "
              "| bytes of state per game |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            versus = f"{r['vs_dust_8x6x5']:.2f}" if r["vs_dust_8x6x5"] is not None else "-"
            numpy_rate = f"{r['numpy_clicks_per_second']:,.0f}" if r["numpy_clicks_per_second"] else "-"
            numpy_ratio = f"{r['speedup_vs_numpy']:,.0f}" if r["speedup_vs_numpy"] else "-"
            print(f"| {r['id']} | {r['cells']} | {r['clicks_per_second']:,.0f} | {versus} | {numpy_rate} "
                  f"| {numpy_ratio} | {r['state_bytes_per_game']} |")
    return rows


def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep = parser.add_mutually_exclusive_group()
    sweep.add_argument("--quick", action="store_true", help="a smaller sweep of batch sizes")
    sweep.add_argument("--batch-sizes", type=flags.positive_ints, default=None)
    parser.add_argument("--min-clicks", type=flags.positive_int, default=1 << 19, help="clicks per timed call")
    parser.add_argument("--repeats", type=flags.positive_int, default=3)
    parser.add_argument("--reference-seconds", type=flags.positive_float, default=3.0)
    parser.add_argument("--ids", type=flags.names(jaxdust.registered(), "ids"), default=jaxdust.registered(),
                        help="comma-separated registered ids of the per-id table (default all)")
    parser.add_argument("--id-games", type=flags.positive_int, default=16384,
                        help="games per batch in the per-id table")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--out", type=flags.report_file("env_throughput"), default="results/env_throughput.json")
    args = parser.parse_args(argv)

    config = game.GameConfig()
    env = jaxdust.DustEnv(config, auto_reset=True)
    sizes = args.batch_sizes or (QUICK_SWEEP if args.quick else FULL_SWEEP)
    all_devices = jax.devices()
    reference_rate = numpy_reference_rate(config, args.reference_seconds, args.seed)

    rows = []
    for num_games in sizes:
        layouts = [all_devices[:1]]
        if len(all_devices) > 1 and num_games % len(all_devices) == 0:
            layouts.append(all_devices)
        for devices in layouts:
            min_clicks = min(args.min_clicks, num_games * 4096)  # keep tiny batches short
            row = measure(env, num_games, devices, min_clicks, args.repeats, args.seed)
            row["speedup_vs_numpy"] = row["clicks_per_second"] / reference_rate
            rows.append(row)
            print(
                f"  games {num_games:>6}  devices {len(devices)}: "
                f"{row['clicks_per_second']:>13,.0f} clicks/s", flush=True,
            )

    device = all_devices[0]
    report = {
        "measured_on": machine.measured_on(jaxdust.__version__),
        "benchmark": "env_throughput",
        "board": {"width": config.width, "height": config.height, "colors": config.colors},
        "backend": jax.default_backend(),
        "device_kind": device.device_kind,
        "device_count": len(all_devices),
        "cpu": machine.cpu_name(),
        "cpu_count": machine.cpu_cores(),
        "jax_version": jax.__version__,
        "numpy_reference_clicks_per_second": reference_rate,
        "results": rows,
    }
    best = max(rows, key=lambda r: r["clicks_per_second"])
    report["best"] = {k: best[k] for k in ("games", "devices", "clicks_per_second", "speedup_vs_numpy")}

    print(f"\nRandom legal play on {config.width}x{config.height}, {config.colors} colours; "
          f"backend {report['backend']} ({device.device_kind}), {machine.cpu_cores()} CPU cores")
    print(f"NumPy reference (plain loops, 1 core): {reference_rate:,.0f} clicks/s\n")
    print("| games | devices | clicks/s | x NumPy | ms per step |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['games']:,} | {r['devices']} | {r['clicks_per_second']:,.0f} | "
              f"{r['speedup_vs_numpy']:,.0f} | {1e3 * r['seconds_per_call'] / r['steps_per_call']:.3f} |")
    print(f"\nbest: {best['clicks_per_second']:,.0f} clicks/s with {best['games']:,} games on "
          f"{best['devices']} device(s)")
    report["ids"] = id_table(args, all_devices, {config: reference_rate})
    files.atomic_write_json(args.out, report)
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    flags.run_command(main, "nothing was written; run the command again")
