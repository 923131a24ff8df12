"""tcp-rules: tensor rewrite rules as text, equality saturation, and fast kernels for TCP."""

__version__ = "0.1.0"
