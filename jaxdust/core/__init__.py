"""The rules and what needs nothing but them: ``game`` (pure JAX rules on one board),
``env`` (a Jumanji-style environment), ``play`` (a policy over a batch of boards),
``boards`` (text form and board files), ``render`` (text and SVG pictures), ``files``
(atomic writes) and ``reference`` (an independent NumPy oracle of the rules for tests)."""
