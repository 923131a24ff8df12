"""MLIR text frontends: a generic syntax layer (``syntax``) and one importer per dialect."""
