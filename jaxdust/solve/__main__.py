"""``python -m jaxdust.solve``: a package, so that running it does not import it twice
(``jaxdust`` itself imports ``jaxdust.solve``)."""

import sys

from jaxdust.solve import main

sys.exit(main())
