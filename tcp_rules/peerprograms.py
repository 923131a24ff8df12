"""Optimized programs of the peers suite kept in a directory, so that the suite can optimize on
one machine and measure on another (``tcpr bench --suite peers --save-programs DIR`` here,
``--programs DIR`` there): the measuring machine needs neither egglog nor the rule library.

The directory holds one ``<workload>.tcp`` per workload (the optimized program as the printer
writes it, read back by the parser: nothing in it is executed) and ``manifest.json``::

    {"schema": 1, "suite": "peers", "quick": bool, "tcp_rules": str,
     "workloads": {name: {"file": str,                # the program's file, in DIR
                          "graph": str,               # fingerprint of the ONNX graph
                          "optimizer": {...}}}}       # as the report's workloads carry it

A program is only used for the graph it was optimized from: the fingerprint covers the graph's
nodes, inputs, outputs and the names, shapes and types of its initializers (not their values,
which the measuring machine draws again from the same seed).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tcp_rules import __version__
from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.ir import Func
from tcp_rules.peerworkloads import Workload

SCHEMA = 1
MANIFEST = "manifest.json"


def fingerprint(w: Workload) -> str:
    """A digest of what ``w``'s optimized program depends on: its graph without the weights'
    values."""
    g = w.model.graph
    h = hashlib.sha256()
    for part in (*g.node, *g.input, *g.output):
        h.update(part.SerializeToString(deterministic=True))
    for t in g.initializer:
        h.update(f"{t.name}:{list(t.dims)}:{t.data_type};".encode())
    for o in w.model.opset_import:
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


def save_programs(where: Path, quick: bool,
                  programs: list[tuple[Workload, Func, dict[str, Any]]]) -> None:
    """Write each (workload, optimized program, optimizer info) to ``where`` (created if
    missing); the manifest last, so that a directory with a manifest is complete."""
    from tcp_rules.printer import print_func

    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TcpError.at(f"cannot create {where}: {e.strerror}") from None
    entries = {}
    for w, func, optimizer in programs:
        name = f"{w.name}.tcp"
        _write_atomic(where / name, print_func(func) + "\n")
        entries[w.name] = {"file": name, "graph": fingerprint(w), "optimizer": optimizer}
    manifest = {"schema": SCHEMA, "suite": "peers", "quick": quick, "tcp_rules": __version__,
                "workloads": entries}
    _write_atomic(where / MANIFEST, json.dumps(manifest, indent=1) + "\n")


class ProgramStore:
    """The programs of a directory :func:`save_programs` wrote, checked against the workloads
    they are asked for."""

    def __init__(self, where: Path, quick: bool):
        path = where / MANIFEST
        try:
            manifest = json.loads(path.read_text())
        except FileNotFoundError:
            raise TcpError.at(f"{where} has no {MANIFEST}: not a directory that --save-programs "
                              "wrote") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise TcpError.at(f"{path}: cannot read it: {e}") from None
        if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA \
                or manifest.get("suite") != "peers" \
                or not isinstance(manifest.get("workloads"), dict):
            raise TcpError.at(f"{path}: not a peers programs manifest of schema {SCHEMA}")
        if manifest.get("quick") is not quick:
            raise TcpError.at(f"{where} holds programs for the suite "
                              f"{'with' if manifest.get('quick') else 'without'} --quick",
                              hint="give --quick both times or neither")
        self.where, self.entries = where, manifest["workloads"]
        self.saved_by = str(manifest.get("tcp_rules"))

    def program(self, w: Workload) -> tuple[Func, dict[str, Any], Path]:
        """``w``'s optimized program, the optimizer info saved with it, and its file."""
        from tcp_rules.elaborate import load_program

        entry = self.entries.get(w.name)
        if not isinstance(entry, dict):
            raise TcpError.at(f"{self.where} has no program for the workload {w.name}",
                              hint="save it with --save-programs and the same workloads")
        if entry.get("graph") != fingerprint(w):
            raise TcpError.at(f"{self.where}: the program for {w.name} was optimized from "
                              "another graph (other sizes, or another version of the suite)",
                              hint="save the programs again with this version")
        file = entry.get("file")
        # only a plain name inside the directory: the manifest must not lead elsewhere
        if not isinstance(file, str) or Path(file).name != file or file.startswith("."):
            raise TcpError.at(f"{self.where / MANIFEST}: {w.name}'s file must be a plain name "
                              f"in {self.where}, not {file!r}")
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
        optimizer = entry.get("optimizer")
        return funcs[0], optimizer if isinstance(optimizer, dict) else {}, path
