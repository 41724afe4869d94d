"""Evaluation: ``baselines`` (simple policies), ``registry`` (every agent behind one
interface), ``stats`` (summaries of solution lengths) and ``plots`` (histograms, curves)."""
