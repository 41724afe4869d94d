"""``python -m jaxdust.solver``: see ``jaxdust.solver.cli``."""

from jaxdust.solver.cli import run

run()
