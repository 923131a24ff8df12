"""MLIR text frontends: a generic syntax layer (``syntax``, ``views``, ``attrs``), the shared
function importer (``importer``) and one op table per dialect (``tcp``).

``import_mlir(path, dims)`` reads a .mlir file; ``tcpr import``, ``run``, ``opt`` and ``check``
call it for files ending in .mlir.
"""

from __future__ import annotations

from tcp_rules.frontends.mlir.importer import import_mlir, import_text

__all__ = ["import_mlir", "import_text"]
