"""mlir-tcp's own test files (tests/data/mlir/mlir-tcp, copied from mlir-tcp) imported function by
function: every function within our op set imports and type-checks, every function mlir-tcp
expects its verifier to refuse is refused, each outcome is recorded in a golden listing, and
every imported function exports to MLIR that reads back as the same program."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.frontends.mlir.attrs import ELEMENT_TYPES
from tcp_rules.frontends.mlir.export import export_func
from tcp_rules.frontends.mlir.importer import _SHARED, TERMINATORS, import_function, import_text
from tcp_rules.frontends.mlir.syntax import Elem, Op, Shaped, Word, parse_mlir
from tcp_rules.frontends.mlir.tcp import OPS, REFUSED
from tcp_rules.frontends.mlir.tensor import OPS as TENSOR_OPS
from tcp_rules.frontends.mlir.views import functions, view, walk
from tcp_rules.ir import Func, same_func
from tcp_rules.pipeline import load_module
from tcp_rules.printer import print_func
from tcp_rules.types import Dim

CORPUS = Path(__file__).parent / "data" / "mlir" / "mlir-tcp"
INDEX_SIZE = 3  # an index argument's size (--dim argN=3)


@dataclass
class Outcome:
    path: str
    func: str
    in_op_set: bool  # only ops and types tcp-rules reads, and no expected verifier error
    expects_error: bool
    result: Func | None
    message: str


def _chunks(text: str) -> list[str]:
    """The file split as lit's -split-input-file does, other chunks blanked so that line
    numbers stay those of the file."""
    lines = text.split("\n")
    marks = [i for i, line in enumerate(lines) if line.strip() == "// -----"]
    bounds = [-1, *marks, len(lines)]
    out = []
    for lo, hi in itertools.pairwise(bounds):
        out.append("\n".join(line if lo < i < hi else "" for i, line in enumerate(lines)))
    return out


def _readable(ops: list[Op], arg_types: list[Elem]) -> bool:
    """Only ops tcp-rules reads, on element types it has; tcp.gather only where it means
    our gather (rank 1: mlir-tcp's is torch.gather, ours numpy.take)."""
    refused = {f"tcp.{n}" for n in REFUSED}
    ops_ok = all(op.name in TERMINATORS or op.name in _SHARED or op.name in TENSOR_OPS
                 or (op.name in OPS and op.name not in refused) for op in ops)
    gathers_ok = all(_rank(view(op).operand_types[:1]) == 1 for op in ops
                     if op.name == "tcp.gather")
    types_ok = all(_element_ok(t) or (isinstance(t, Word) and t.text == "index")
                   for t in arg_types)
    return ops_ok and gathers_ok and types_ok


def _rank(types: tuple[Elem, ...]) -> int | None:
    t = types[0] if types else None
    return len(t.dims) if isinstance(t, Shaped) and t.dims is not None else None


def _element_ok(t: Elem) -> bool:
    return isinstance(t, Shaped) and isinstance(t.elem, Word) and t.elem.text in ELEMENT_TYPES


@functools.cache
def corpus() -> list[Outcome]:
    out: list[Outcome] = []
    for path in sorted(CORPUS.rglob("*.mlir")):
        rel = path.relative_to(CORPUS).as_posix()
        for chunk in _chunks(path.read_text()):
            expects = "expected-error" in chunk
            try:
                file = parse_mlir(Source(rel, chunk))
            except TcpError as e:
                if chunk.strip("\n").strip():
                    out.append(Outcome(rel, "?", False, expects, None,
                                       e.diagnostics[0].render().splitlines()[0]))
                continue
            fns = functions(file)
            by_name = {f.name: f for f in fns}
            for fn in fns:
                ops = list(walk(fn.body.blocks[0].ops)) if fn.body else []
                ok = _readable(ops, [a.type for a in fn.args]) and not expects
                dims = {a.name: Dim.of(INDEX_SIZE) for a in fn.args
                        if isinstance(a.type, Word) and a.type.text == "index"}
                try:
                    func, _ = import_function(file, fn, dims, by_name)
                    out.append(Outcome(rel, fn.name, ok, expects, func, "ok"))
                except TcpError as e:
                    msg = e.diagnostics[0].render().splitlines()[0]
                    out.append(Outcome(rel, fn.name, ok, expects, None, msg))
    return out


def test_corpus_outcomes(golden: Callable[[str, str], None]) -> None:
    """The listing: each function's outcome, and the counts (read it like code)."""
    rows = corpus()
    imported = [r for r in rows if r.result is not None]
    in_set = [r for r in rows if r.in_op_set]
    lines = [f"# {len(imported)} of {len(rows)} functions import; {len(in_set)} use only ops "
             f"and types tcp-rules reads (no expected verifier error), of which "
             f"{sum(1 for r in in_set if r.result is not None)} import",
             f"# files: {len({r.path for r in rows})}; files whose functions all import: "
             f"{len({r.path for r in rows} - {r.path for r in rows if r.result is None})}"]
    lines += [f"{r.path} @{r.func}: {r.message}" for r in rows]
    golden("mlir/mlir_tcp_corpus.txt", "\n".join(lines) + "\n")


def test_functions_in_our_op_set_import() -> None:
    failed = [f"{r.path} @{r.func}: {r.message}" for r in corpus()
              if r.in_op_set and r.result is None]
    assert not failed, "\n".join(failed)


def test_functions_mlir_tcp_refuses_are_refused() -> None:
    """mlir-tcp's negative tests (expected-error): our type checker refuses them too."""
    accepted = [f"{r.path} @{r.func}" for r in corpus() if r.expects_error and r.result]
    assert not accepted, "\n".join(accepted)
    assert sum(1 for r in corpus() if r.expects_error) >= 20


@pytest.mark.parametrize("row", [r for r in corpus() if r.result is not None],
                         ids=lambda r: f"{r.path}@{r.func}")
def test_imported_function_round_trips(row: Outcome) -> None:
    """Exported to MLIR and read back, and printed as a .tcp program and parsed back: the
    same program (the names import makes are names the program language takes)."""
    assert row.result is not None
    text = export_func(row.result)
    back = import_text(Source("exported.mlir", text)).module.funcs[0]
    assert same_func(row.result, back), text
    printed = print_func(row.result)
    assert same_func(row.result, load_module(Source("printed.tcp", printed)).funcs[0]), printed
