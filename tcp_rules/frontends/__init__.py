"""Importers: programs from other formats, built through the builder and the op table only.

``tcp_rules.frontends.onnx`` reads ONNX models (the optional ``onnx`` extra). Each importer
returns an :class:`Imported`: the TCP module, the weights that became parameters, and the map
from the source's tensor names to parameter names, so inputs keyed by the source's names run as
they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from tcp_rules.ir import Module
from tcp_rules.printer import print_module

_KEYWORDS = frozenset({"inf", "nan", "true", "false", "func", "return"})


@dataclass(frozen=True)
class Imported:
    """A program brought in from another format.

    ``weights`` holds the arrays of parameters that came from the model's own data (ONNX
    initializers too large to inline); ``aliases`` maps each source name of a parameter to the
    parameter's TCP name where the two differ.
    """

    module: Module
    weights: Mapping[str, np.ndarray] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)


def render_imported(imported: Imported, source: str, weights_file: str | None = None) -> str:
    """The module as program text, with a header saying where it came from, which source
    names became which parameters, and where the weights are."""
    lines = [f"# imported from {source} by tcpr import"]
    for src, tcp in sorted(imported.aliases.items()):
        lines.append(f"# '{src}' is parameter {tcp}")
    if imported.weights:
        names = ", ".join(sorted(imported.weights))
        where = f" in {weights_file}" if weights_file else " (write them with -o)"
        lines.append(f"# weights{where}: {names}")
    return "\n".join(lines) + "\n" + print_module(imported.module)


def identifier(name: str, taken: Iterable[str] = ()) -> str:
    """A TCP name for a source tensor name (the documented mapping rule).

    Characters other than letters, digits and ``_`` become ``_``; a name that starts with a digit
    or is empty gets a ``v`` in front; a keyword gets a ``_`` after it; a name already taken gets
    ``_2``, ``_3``, ... after it.
    """
    base = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not base or not (base[0].isalpha() or base[0] == "_"):
        base = "v" + base
    if base in _KEYWORDS:
        base += "_"
    used = set(taken)
    out, n = base, 1
    while out in used:
        n += 1
        out = f"{base}_{n}"
    return out
