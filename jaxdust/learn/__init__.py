"""Learning: ``networks`` (Flax MLPs), the learners (``dqn``, ``imitation``), ``datasets``
(solver-labelled positions), ``agents`` (networks as policies and scorers), ``checkpoint``
(orbax) and ``runs`` (run directories: the learner registry, training loop and loading)."""
