"""Tracing NumPy-style Python functions into TCP programs: ``@tcp_rules.jit``.

``context`` holds the trace being recorded and the user's source positions, ``array`` the
traced array and NumPy's typing rules (promotion, weak scalars, broadcasting) made explicit,
``indexing`` the shape work (reshape, indexing, matmul's batch dims), ``jitted`` the decorator
and its per-signature cache. The user-facing functions are in :mod:`tcp_rules.numpy`.
"""
