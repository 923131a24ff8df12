"""tcp-rules: tensor rewrite rules as text, equality saturation, and fast kernels for TCP."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``tcp_rules.jit`` loads the tracing package when first used, so that importing tcp_rules
    (the CLI's first step) stays cheap."""
    if name == "jit":
        from tcp_rules.tracing.jitted import jit

        return jit
    raise AttributeError(f"module 'tcp_rules' has no attribute {name!r}")
