"""Adapters to other environment APIs (optional extras; the core needs neither):

- ``jaxdust.adapters.jumanji_env.DustJumanji``: a real ``jumanji.Environment``
  (``pip install -e ".[jumanji]"``), so Jumanji's wrappers take it.
- ``jaxdust.adapters.gym_env.DustGymEnv`` and ``DustVectorEnv``: Gymnasium's single and
  vector APIs (``pip install -e ".[gymnasium]"``), the batched JAX env underneath.
"""
