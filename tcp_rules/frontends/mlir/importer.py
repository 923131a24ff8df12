"""Importing MLIR functions as TCP funcs: the part every dialect shares.

Each public ``func.func`` becomes a func; its tensor arguments become parameters of the same
names (``%arg0`` is ``arg0``); a dynamic dim ``?`` becomes a symbol named for its argument and
axis (``arg0_d1``) unless ``--dim`` names or sizes it. Where an op needs two dims to be equal
(operands of an elementwise op, a matmul's contracted axes, a declared static size), the symbols
are unified, the later-named into the earlier, and the function is read again with the
unified types. An ``index`` argument is a dim of its own (``--dim arg1=8`` sizes it).

Ops are read by their dialect's table, ``OPS`` in the module :data:`DIALECTS` names, mapping an
op name to a handler ``(ctx, op) -> results``; ``arith`` and ``tensor`` (index values, shapes)
are read by tensor.py, calls and ``return`` here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tcp_rules import build as tb
from tcp_rules.build import Literal, make_apply
from tcp_rules.diagnostics import Diagnostic, Source, TcpError
from tcp_rules.frontends import Imported, identifier
from tcp_rules.frontends.mlir.attrs import error, shaped
from tcp_rules.frontends.mlir.syntax import (
    Block,
    Elem,
    Group,
    MlirFile,
    Op,
    Symbol,
    Value,
    Word,
    parse_mlir,
)
from tcp_rules.frontends.mlir.views import FuncOp, functions, render, view
from tcp_rules.ir import Func, Module
from tcp_rules.ir import Value as TValue
from tcp_rules.ops import OPS, ShapeError
from tcp_rules.types import Dim, TensorType

Result = TValue | Dim  # a tensor, or an index value (a dim)
Handler = Callable[["FuncContext", Op], Sequence[Result]]

# dialect prefix -> the module whose OPS table reads its ops
DIALECTS: dict[str, str] = {"tcp": "tcp_rules.frontends.mlir.tcp",
                            "tcpr": "tcp_rules.frontends.mlir.tcp",
                            "arith": "tcp_rules.frontends.mlir.tensor",
                            "tensor": "tcp_rules.frontends.mlir.tensor",
                            "stablehlo": "tcp_rules.frontends.mlir.stablehlo",
                            "chlo": "tcp_rules.frontends.mlir.chlo"}
TERMINATORS = frozenset({"return", "func.return", "tcp.yield", "stablehlo.return"})


def op_table(dialect: str) -> Mapping[str, Handler] | None:
    """The handlers of a dialect, or None when no importer reads it."""
    module = DIALECTS.get(dialect)
    if module is None:
        return None
    table: Mapping[str, Handler] = importlib.import_module(module).OPS
    return table


class _Restart(Exception):
    """Two dims were unified: the function is read again with the new bindings."""


@dataclass
class FuncContext:
    """The state of one function's import: SSA names to values, and the dim bindings."""

    file: MlirFile
    funcs: Mapping[str, FuncOp]
    bindings: dict[str, Dim]  # symbol -> what it stands for (--dim, unifications)
    order: list[str]  # symbols in the order they were made: unification keeps the earlier
    env: dict[str, Result] = field(default_factory=dict)
    depth: int = 0

    # values ------------------------------------------------------------------------------

    def operand(self, e: Elem) -> TValue:
        """The tensor an operand names."""
        v = self.lookup(e)
        if not isinstance(v, TValue):
            raise error(f"{render(e)} is an index, where a tensor is expected", e.span)
        return v

    def index(self, e: Elem) -> Dim:
        """The dim an ``index`` operand names."""
        v = self.lookup(e)
        if not isinstance(v, Dim):
            raise error(f"{render(e)} is a tensor, where an index is expected", e.span)
        return v

    def lookup(self, e: Elem) -> Result:
        if not isinstance(e, Value):
            raise error(f"expected a value (%name), found {render(e)}", e.span)
        if e.name not in self.env:
            raise error(f"use of undefined value %{e.name}", e.span)
        return self.env[e.name]

    def dim(self, d: Dim) -> Dim:
        """``d`` with the bindings applied (to a fixed point: bindings may chain)."""
        for _ in range(len(self.bindings) + 1):
            nd = d.subst(self.bindings)
            if nd == d:
                return d
            d = nd
        return d

    # applying ops ------------------------------------------------------------------------

    def apply(self, name: str, args: Sequence[TValue | Literal], attrs: Mapping[str, object],
              op: Op, result_type: Elem | None = None) -> TValue:
        """Apply our op ``name``; mismatched symbolic dims are unified, other shape errors
        point at ``op``; the result is checked against its declared MLIR type."""
        opdef = OPS[name]
        values = [a for a in args if isinstance(a, TValue)]
        self._unify_operands(name, values, attrs)
        try:
            out = make_apply(opdef, args, attrs, span=op.span)
        except ShapeError as e:
            raise error(f"{op.name}: {e.message}", op.span) from None
        if result_type is not None:
            self.check(out, result_type, op)
        return out

    def check(self, v: TValue, declared: Elem, op: Op) -> None:
        """``v``'s type agrees with the declared MLIR type: same dtype and rank, and a static
        declared size binds a symbolic one."""
        dtype, dims = shaped(declared, op.span, "result type")
        if v.type.dtype is not dtype or v.type.rank != len(dims):
            raise error(f"{op.name}: the result is {v.type}, but the op declares "
                        f"{render(declared)}", declared.span)
        for ours, theirs in zip(v.type.dims, dims, strict=True):
            if theirs is not None and ours != Dim.of(theirs) \
                    and not self.unify(ours, Dim.of(theirs)):
                raise error(f"{op.name}: the result is {v.type}, but the op declares "
                            f"{render(declared)}", declared.span)

    def unify(self, a: Dim, b: Dim) -> bool:
        """Make ``a`` and ``b`` equal by binding a symbol (to a symbol, a size or an expression
        without it); restarts the import when it binds one; False when they cannot be made
        equal (two different sizes, two expressions)."""
        a, b = self.dim(a), self.dim(b)
        if a == b:
            return True
        sa, sb = a.symbol, b.symbol
        if sa is not None and sb is not None:
            # names the file or --dim gave (not in order) win, then the earlier argument's
            rank = {s: i for i, s in enumerate(self.order)}
            keep, drop = sorted((sa, sb), key=lambda s: rank.get(s, -1))
            self.bindings[drop] = Dim.of(keep)
        elif sa is not None and sa not in b.symbols and (sb is None or sa in self.order):
            self.bindings[sa] = b  # a size, or an expression of other symbols (2*N)
        elif sb is not None and sb not in a.symbols:
            self.bindings[sb] = a
        else:
            return False
        raise _Restart

    def _unify_operands(self, name: str, values: Sequence[TValue],
                        attrs: Mapping[str, object]) -> None:
        """The dims an op requires equal: all of an elementwise op's operands', a matmul's
        contracted and batch axes, the non-joined axes of a concat."""
        opdef = OPS[name]
        if opdef.traits.elementwise and len(values) > 1:
            first = values[0].type
            for v in values[1:]:
                if v.type.rank == first.rank:
                    for x, y in zip(first.dims, v.type.dims, strict=True):
                        self.unify(x, y)
        elif name == "matmul" and len(values) == 2 and values[0].type.rank >= 2 \
                and values[0].type.rank == values[1].type.rank:
            a, b = values[0].type.dims, values[1].type.dims
            self.unify(a[-1], b[-2])
            for x, y in zip(a[:-2], b[:-2], strict=True):
                self.unify(x, y)
        elif name == "concat" and values:
            axis = attrs.get("axis")
            first = values[0].type
            for v in values[1:]:
                if v.type.rank == first.rank:
                    for i, (x, y) in enumerate(zip(first.dims, v.type.dims, strict=True)):
                        if i != axis:
                            self.unify(x, y)

    # blocks ------------------------------------------------------------------------------

    def run_block(self, block: Block, bound: Mapping[str, Result]) -> list[TValue]:
        """Read a block's ops with ``bound`` names defined; the values its terminator yields."""
        self.env.update(bound)
        for op in block.ops:
            if op.name in TERMINATORS:
                return [self.operand(e) for e in view(op).operands]
            results = self.read_op(op)
            if len(results) != len(op.results):
                raise error(f"{op.name} gives {len(results)} result(s), but "
                            f"{len(op.results)} are named", op.span)
            self.env.update(zip(op.results, results, strict=True))
        raise error("block has no terminator (return or yield)", block.span)

    def read_op(self, op: Op) -> Sequence[Result]:
        """Dispatch ``op`` to its dialect's handler (or the shared ones here)."""
        shared = _SHARED.get(op.name)
        if shared is not None:
            return shared(self, op)
        dialect = op.name.split(".", 1)[0] if "." in op.name else ""
        table = op_table(dialect)
        if table is None:
            known = ", ".join(sorted(DIALECTS))
            raise error(f"unknown op '{op.name}': tcp-rules reads the dialects {known}",
                        op.name_span)
        handler = table.get(op.name)
        if handler is None:
            ours = f"tcpr.{op.name.split('.', 1)[1]}"
            own = [n for n in sorted(table) if n.startswith(dialect + ".")]
            hint = (f"mlir-tcp has no such op; tcp-rules writes its own as {ours}"
                    if ours in table and dialect == "tcp" else f"{dialect} ops read: "
                    f"{', '.join(own)}")
            raise error(f"unknown op '{op.name}' (not in tcp-rules' {dialect} importer)",
                        op.name_span, hint=hint)
        return handler(self, op)


# calls ------------------------------------------------------------------------------------

def _call(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """A call inlines the callee (a private function of the same file)."""
    sym = next((e for e in op.body if isinstance(e, Symbol)), None)
    callee = ctx.funcs.get(sym.name) if sym is not None else None
    if callee is None or callee.body is None:
        raise error(f"call of unknown function {render(sym) if sym else ''}", op.span)
    if ctx.depth > 50:
        raise error("calls nest more than 50 deep (recursion?)", op.span)
    # pretty form: call @f(%a, %b) : ...; generic: "func.call"(%a, %b) {callee = @f} : ...
    given = next((e.items for e in op.body if isinstance(e, Group) and e.open == "("), ())
    args = [ctx.lookup(e) for e in (view(op).operands or
                                    [x for x in given if isinstance(x, Value)])]
    if len(args) != len(callee.args):
        raise error(f"@{callee.name} takes {len(callee.args)} argument(s), given {len(args)}",
                    op.span)
    inner = FuncContext(ctx.file, ctx.funcs, ctx.bindings, ctx.order, depth=ctx.depth + 1)
    return inner.run_block(callee.body.blocks[0],
                           {a.name: x for a, x in zip(callee.args, args, strict=True)})


_SHARED: dict[str, Handler] = {"func.call": _call, "call": _call}


# functions and files ------------------------------------------------------------------------

def import_function(file: MlirFile, fn: FuncOp, dims: Mapping[str, Dim] | None = None,
                    funcs: Mapping[str, FuncOp] | None = None) -> tuple[Func, dict[str, str]]:
    """The TCP func of one ``func.func``, and its aliases (MLIR argument name -> parameter)."""
    bindings = dict(dims or {})
    for _ in range(64 + 4 * sum(1 for _ in fn.args)):  # each restart binds one more symbol
        try:
            return _import_once(file, fn, bindings, funcs or {})
        except _Restart:
            continue
    raise error(f"func @{fn.name}: its dims do not settle", fn.op.span)


def _import_once(file: MlirFile, fn: FuncOp, bindings: dict[str, Dim],
                 funcs: Mapping[str, FuncOp]) -> tuple[Func, dict[str, str]]:
    if fn.body is None or len(fn.body.blocks) != 1:
        raise error(f"func @{fn.name}: expected a body of one block", fn.op.span)
    ctx = FuncContext(file, funcs, bindings, [])
    name = identifier(fn.name)
    builder = tb.FuncBuilder(name)
    taken: list[str] = []
    aliases: dict[str, str] = {}
    bound: dict[str, Result] = {}
    for arg in fn.args:
        tcp = identifier(arg.name, taken)
        taken.append(tcp)
        if tcp != arg.name:
            aliases[arg.name] = tcp
        if isinstance(arg.type, Word) and arg.type.text == "index":
            ctx.order.append(tcp)
            bound[arg.name] = ctx.dim(Dim.of(tcp))
            continue
        dtype, shape = shaped(arg.type, arg.span, f"type of %{arg.name}")
        dims = []
        for axis, d in enumerate(shape):
            if d is None:
                ctx.order.append(f"{tcp}_d{axis}")
                dims.append(ctx.dim(Dim.of(f"{tcp}_d{axis}")))
            else:
                dims.append(Dim.of(d))
        bound[arg.name] = builder.param(tcp, TensorType(dtype, tuple(dims)))
    results = ctx.run_block(fn.body.blocks[0], bound)
    if len(results) != len(fn.results):
        raise error(f"func @{fn.name} returns {len(results)} value(s) but declares "
                    f"{len(fn.results)}", fn.op.span)
    ret = next((o for o in fn.body.blocks[0].ops if o.name in TERMINATORS), fn.op)
    for v, t in zip(results, fn.results, strict=True):
        ctx.check(v, t, ret)
    params = {s for p in builder.params for s in p.type.symbols}
    for v in results:
        loose = sorted(v.type.symbols - params)
        if loose:
            raise error(f"func @{fn.name}: result dim {loose[0]} is not a dim of any tensor "
                        f"argument", fn.op.span,
                        hint=f"give its size with --dim {loose[0]}=N")
    builder.ret(*results)
    func = builder.finish()
    return Func(func.name, func.params, func.results, func.result_types, fn.op.span), aliases


def import_file(file: MlirFile, dims: Mapping[str, Dim] | None = None) -> Imported:
    """Every public function of the file as a func of one module."""
    fns = functions(file)
    by_name = {f.name: f for f in fns}
    public = [f for f in fns if f.visibility != "private" and f.body is not None]
    if not public:
        raise TcpError.at(f"{file.source.name}: no public func.func to import", stage="import")
    out: list[Func] = []
    aliases: dict[str, str] = {}
    problems: list[Diagnostic] = []  # the first error of each function, all reported at once
    for fn in public:
        try:
            func, names = import_function(file, fn, dims, by_name)
        except TcpError as e:
            problems.extend(e.diagnostics)
            continue
        out.append(func)
        aliases.update({f"{fn.name}:%{k}" if len(public) > 1 else f"%{k}": v
                        for k, v in names.items()})
    if problems:
        raise TcpError(problems, "import")
    seen: set[str] = set()
    for f in out:  # MLIR refuses a symbol defined twice too
        if f.name in seen:
            raise error(f"a second function named {f.name}", f.span)
        seen.add(f.name)
    return Imported(Module(tuple(out)), aliases=aliases)


def import_text(source: Source, dims: Mapping[str, int | str] | None = None) -> Imported:
    """Import MLIR text (``dims`` from ``--dim``: a symbol to a size or another symbol)."""
    bindings = {k: Dim.of(int(v) if isinstance(v, int) or str(v).isdigit() else str(v))
                for k, v in (dims or {}).items()}
    return import_file(parse_mlir(source), bindings)


def import_mlir(path: str | Path, dims: Mapping[str, int | str] | None = None) -> Imported:
    """Import a .mlir file (``tcpr import``, and ``tcpr run/opt/check`` on .mlir files)."""
    from tcp_rules.grammar.parser import read_source

    return import_text(read_source(path), dims)
