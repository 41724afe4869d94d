"""Search in JAX: ``heuristic`` (the hand-made estimates of clicks left and the scorer
interface), ``keys`` (position keys, mirror images merged where the rules allow),
``selection`` (sort-free smallest-k), ``beam`` (a beam search with a pluggable scorer, for
batches and networks), ``points`` (the beam for SameGame's points and Clickomania's cells
left) and ``mcts`` (Gumbel MuZero from ``mctx`` over the exact simulator)."""
