"""egglog's Rust bindings (``egglog.bindings``), loaded without the rest of the egglog package.

tcp-rules drives egglog through its bindings only: program text in, e-graph tables out.
``import egglog`` also loads egglog's Python API, whose pretty-printer imports black and whose
tracing imports opentelemetry: ~0.35 s of every ``tcpr opt`` for code it never calls. So the
extension module is found where ``import egglog.bindings`` would find it and loaded by itself,
under that same name in ``sys.modules``: a later ``import egglog`` finds it there and loads the
rest of the package around it, as usual (loading the bindings twice fails: pyo3-log allows one
logger per process); only the package's ``bindings`` attribute stays unset, which ``from egglog
import bindings`` and egglog's own modules do not need. Where an egglog release keeps its
bindings elsewhere, the package is imported the ordinary way.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING

NAME = "egglog.bindings"


def _load() -> ModuleType:
    found = sys.modules.get(NAME)
    if found is not None:
        return found
    package = importlib.util.find_spec("egglog")  # finds the package without running it
    spec = None
    if package is not None and package.submodule_search_locations is not None:
        spec = importlib.machinery.PathFinder.find_spec(
            NAME, list(package.submodule_search_locations))
    if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
        from egglog import bindings as imported

        return imported
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[NAME]
        raise
    return module


if TYPE_CHECKING:
    from egglog import bindings
else:
    bindings = _load()
