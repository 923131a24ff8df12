"""Optimized programs kept in a directory, so that a benchmark suite can optimize on one
machine and measure on another (``tcpr bench --suite peers|models --save-programs DIR`` here,
``--programs DIR`` there): the measuring machine needs neither egglog nor the rule library.

The directory holds one ``<graph>.<variant>.tcp`` per graph and optimizer variant (the
optimized program as the printer writes it, read back by the parser: nothing in it is
executed) and ``manifest.json``::

    {"schema": 1, "suite": str, "sizes": str, "tcp_rules": str,
     "graphs": {name: {"graph": str,                  # fingerprint of the ONNX graph
                       "variants": {variant: {"file": str,          # in DIR
                                              "optimizer": {...}}}}}}  # the suite's stats

A program is only used for the graph it was optimized from: the fingerprint covers the graph's
nodes, inputs, outputs and the names, shapes and types of its initializers (not their values,
which the measuring machine draws again from the same seed), and the suite and its sizes must
be the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import onnx

from tcp_rules import __version__
from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.ir import Func

SCHEMA = 1
MANIFEST = "manifest.json"


def fingerprint(model: onnx.ModelProto) -> str:
    """A digest of what an optimized program of ``model`` depends on: its graph without the
    weights' values."""
    g = model.graph
    h = hashlib.sha256()
    for part in (*g.node, *g.input, *g.output):
        h.update(part.SerializeToString(deterministic=True))
    for t in g.initializer:
        h.update(f"{t.name}:{list(t.dims)}:{t.data_type};".encode())
    for o in model.opset_import:
        h.update(f"{o.domain}:{o.version};".encode())
    return h.hexdigest()[:24]


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it: a reader never sees half
    a file, and an interrupted save leaves the old one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


Programs = Mapping[str, tuple[onnx.ModelProto, Mapping[str, tuple[Func, dict[str, Any]]]]]


def save_programs(where: Path, suite: str, sizes: str, programs: Programs) -> None:
    """Write ``programs`` (graph name: its model and, by variant, the optimized program and the
    optimizer's stats) to ``where`` (created if missing); the manifest last, so that a
    directory with a manifest is complete."""
    from tcp_rules.printer import print_func

    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TcpError.at(f"cannot create {where}: {e.strerror}") from None
    entries: dict[str, Any] = {}
    for name, (model, variants) in programs.items():
        files = {}
        for variant, (func, optimizer) in variants.items():
            file = f"{name}.{variant}.tcp"
            _write_atomic(where / file, print_func(func) + "\n")
            files[variant] = {"file": file, "optimizer": optimizer}
        entries[name] = {"graph": fingerprint(model), "variants": files}
    manifest = {"schema": SCHEMA, "suite": suite, "sizes": sizes, "tcp_rules": __version__,
                "graphs": entries}
    _write_atomic(where / MANIFEST, json.dumps(manifest, indent=1) + "\n")


class ProgramStore:
    """The programs of a directory :func:`save_programs` wrote for ``suite`` at ``sizes``,
    checked against the graphs they are asked for."""

    def __init__(self, where: Path, suite: str, sizes: str):
        path = where / MANIFEST
        try:
            manifest = json.loads(path.read_text())
        except FileNotFoundError:
            raise TcpError.at(f"{where} has no {MANIFEST}: not a directory that --save-programs "
                              "wrote") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise TcpError.at(f"{path}: cannot read it: {e}") from None
        if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA \
                or not isinstance(manifest.get("graphs"), dict):
            raise TcpError.at(f"{path}: not a programs manifest of schema {SCHEMA}")
        if manifest.get("suite") != suite:
            raise TcpError.at(f"{where} holds programs of the {manifest.get('suite')} suite, "
                              f"not of the {suite} suite")
        if manifest.get("sizes") != sizes:
            raise TcpError.at(f"{where} holds programs for the {manifest.get('sizes')} sizes, "
                              f"not the {sizes} ones", hint="give --quick both times or neither")
        self.where, self.entries = where, manifest["graphs"]
        self.saved_by = str(manifest.get("tcp_rules"))

    def program(self, name: str, model: onnx.ModelProto, variant: str
                ) -> tuple[Func, dict[str, Any], Path]:
        """Graph ``name``'s program for ``variant``, the optimizer's stats saved with it, and
        its file."""
        from tcp_rules.elaborate import load_program

        entry = self.entries.get(name)
        if not isinstance(entry, dict):
            raise TcpError.at(f"{self.where} has no programs for {name}",
                              hint="save them with --save-programs and the same graphs")
        if entry.get("graph") != fingerprint(model):
            raise TcpError.at(f"{self.where}: the programs for {name} were optimized from "
                              "another graph (other sizes, or another version of the suite)",
                              hint="save the programs again with this version")
        saved = entry.get("variants")
        saved = saved.get(variant) if isinstance(saved, dict) else None
        file = saved.get("file") if isinstance(saved, dict) else None
        # only a plain name inside the directory: the manifest must not lead elsewhere
        if not isinstance(file, str) or Path(file).name != file or file.startswith("."):
            raise TcpError.at(f"{self.where / MANIFEST}: {name}'s {variant} program must be a "
                              f"file in {self.where}, not {file!r}")
        path = self.where / file
        if path.is_symlink():  # nor through a link
            raise TcpError.at(f"{path}: a link; the programs must be files in {self.where}")
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise TcpError.at(f"{path}: cannot read it: {e}") from None
        funcs = load_program(Source(str(path), text)).funcs
        if len(funcs) != 1:
            raise TcpError.at(f"{path}: expected one func, found {len(funcs)}")
        assert isinstance(saved, dict)
        optimizer = saved.get("optimizer")
        return funcs[0], optimizer if isinstance(optimizer, dict) else {}, path


    def origin(self) -> dict[str, str]:
        """Where the programs came from, as a suite's report says it."""
        return {"dir": str(self.where), "saved_by": self.saved_by}


def optimized(store: ProgramStore | None, name: str, model: onnx.ModelProto, imported: Func,
              variant: str, optimize: Callable[[], tuple[Func, dict[str, Any]]]
              ) -> tuple[Func, dict[str, Any]]:
    """Graph ``name``'s ``variant`` program and the optimizer's stats: from ``store`` where
    there is one (it must take and give what the ``imported`` graph does), else ``optimize()``.
    """
    if store is None:
        return optimize()
    func, stats, where = store.program(name, model, variant)
    want = ([p.type for p in imported.params], list(imported.result_types))
    got = ([p.type for p in func.params], list(func.result_types))
    if want != got:
        raise TcpError.at(f"{where}: the program's parameters or results differ from the "
                          "imported graph's", hint="save the programs again with this version")
    return func, stats
