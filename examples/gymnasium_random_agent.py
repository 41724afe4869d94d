"""A masked random agent playing the dust game through Gymnasium's own tools: its registry
(``gymnasium.make``), its episode-statistics wrapper and its masked action sampling.

    pip install -e ".[gymnasium]" && python examples/gymnasium_random_agent.py --episodes 20   # in a checkout
"""

import argparse

import gymnasium
import numpy as np
from gymnasium.wrappers import RecordEpisodeStatistics

import jaxdust.adapters.gym_env  # noqa: F401  (registers the jaxdust/... ids)


def main(argv=None) -> list[int]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="jaxdust/Dust-8x6x5-v0")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes must be at least 1, got {args.episodes}")
    if args.seed < 0:  # Gymnasium's seeding takes seeds >= 0
        parser.error(f"--seed must be >= 0, got {args.seed}")
    if "/" not in args.env:  # jaxdust.make's id: Gymnasium registers it in the jaxdust namespace
        args.env = f"jaxdust/{args.env}"
    try:
        env = RecordEpisodeStatistics(gymnasium.make(args.env))
    except gymnasium.error.Error as error:  # an unknown id: Gymnasium's message lists the near ones
        parser.error(f"--env: {error}")
    env.action_space.seed(args.seed)
    lengths, returns = [], []
    for episode in range(args.episodes):
        _, info = env.reset(seed=args.seed + episode)
        done = False
        while not done:
            action = env.action_space.sample(mask=info["action_mask"])  # only clicks that remove cells
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        lengths.append(int(info["episode"]["l"]))
        returns.append(float(info["episode"]["r"]))
    # The return is 11 minus the clicks in the dust game and Former (-1 a click, +10 for the
    # one that clears; the mask leaves no empty click), the points in SameGame, and the
    # cells removed in Clickomania.
    print(f"{args.episodes} games of {args.env}: mean {np.mean(lengths):.2f} clicks (min {min(lengths)}, "
          f"max {max(lengths)}), mean return {np.mean(returns):.2f}")
    return lengths


if __name__ == "__main__":
    main()
