"""``python -m jaxdust.solver``: see ``jaxdust.solver.cli``."""

import sys

from jaxdust.solver.cli import main

sys.exit(main())
