"""Search in JAX: ``heuristic`` (the hand-made estimate of clicks left and the scorer
interface) and ``beam`` (a beam search with a pluggable scorer, for batches and networks)."""
