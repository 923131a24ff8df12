"""Tracing NumPy-style Python functions into TCP programs: ``@tcp_rules.jit``.

``context`` holds the trace being recorded and the user's source positions; ``values`` NumPy's
typing rules on the trace's values (dtypes, broadcasting, constants); ``array`` the traced array
with NumPy's operators and elementwise promotion (weak scalars included); ``indexing`` the shape
work (reshape, indexing, matmul's batch dims); ``jitted`` the decorator and its per-signature
cache. The user-facing functions are in :mod:`tcp_rules.numpy`.
"""
