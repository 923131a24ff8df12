"""The pipeline: one function of named stages; ``--emit STAGE`` prints a stage and stops there.

    source ─parse─▶ ast ─typecheck─▶ program ─(rules: egglog ─saturate─▶ report)─▶ optimized
           (─▶ mlir: as MLIR text) ─lower, compile─▶ llvm ─run─▶ results
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.elaborate import elaborate
from tcp_rules.frontends import Imported
from tcp_rules.grammar.ast import format_ast
from tcp_rules.grammar.parser import parse_program, read_source
from tcp_rules.interpret import bind_symbols, evaluate
from tcp_rules.ir import Func, Module
from tcp_rules.memory import check_run
from tcp_rules.printer import print_func, print_module

if TYPE_CHECKING:  # the optimizer's stages load egglog: imported when a program is optimized
    from tcp_rules.optimize import OptOptions, OptResult
    from tcp_rules.rules.model import Rule
    from tcp_rules.verify.translation import Validation

PROGRAM_STAGES = ("ast", "program")
OPT_STAGES = ("egglog", "report", "optimized", "mlir", "kernels")


class EmitStop(Exception):
    """Raised after printing the requested stage: the pipeline stops there."""


@dataclass
class Emitter:
    """Prints the stage the user asked for with ``--emit`` and stops the pipeline after it."""

    stage: str | None = None
    write: Callable[[str], None] = print
    printed: list[str] = field(default_factory=list)

    def __call__(self, stage: str, render: Callable[[], str]) -> None:
        if stage == self.stage:
            text = render()
            self.printed.append(text)
            self.write(text.rstrip("\n"))
            raise EmitStop(stage)


def load_module(source: Source, emit: Emitter | None = None) -> Module:
    """Parse and type-check a program, emitting the ``ast`` and ``program`` stages."""
    emit = emit or Emitter()
    tree = parse_program(source)
    emit("ast", lambda: format_ast(tree))
    module = elaborate(tree)
    emit("program", lambda: print_module(module))
    return module


def load_module_file(path: str | Path, emit: Emitter | None = None) -> Module:
    return load_module(read_source(path), emit)


# suffix -> (module, its import function(path, dims) -> Imported, the extra it needs)
IMPORTERS = {".onnx": ("tcp_rules.frontends.onnx", "import_onnx", "onnx"),
             ".mlir": ("tcp_rules.frontends.mlir", "import_mlir", "")}


def load_program(path: str | Path, emit: Emitter | None = None,
                 dims: Mapping[str, int | str] | None = None) -> Imported:
    """A program from a .tcp file or, by its suffix, from a model an importer reads (.onnx,
    .mlir).

    ``dims`` binds the model's named dims (``--dim batch=8``); it applies to imports only.
    Emits the ``program`` stage.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in IMPORTERS:
        if dims:
            raise TcpError.at(f"{path}: --dim applies to imported models (.onnx, .mlir), not to "
                              f".tcp programs, whose dims are written in the program")
        return Imported(load_module_file(path, emit))
    module, function, extra = IMPORTERS[suffix]
    try:
        frontend = importlib.import_module(module)
    except ImportError as e:
        raise TcpError.at(f"{path}: reading {suffix} files needs the '{e.name}' package",
                          hint=f"pip install 'tcp-rules[{extra}]'" if extra else None) from None
    imported: Imported = getattr(frontend, function)(path, dims)
    (emit or Emitter())("program", lambda: print_module(imported.module))
    return imported


def select_func(module: Module, name: str | None) -> Func:
    """The func to run: the one named, or the only one."""
    if name is None:
        if len(module.funcs) > 1:
            names = ", ".join(f.name for f in module.funcs)
            raise TcpError.at(f"the program has several funcs ({names}); choose one with --func")
        return module.funcs[0]
    try:
        return module.func(name)
    except KeyError:
        names = ", ".join(f.name for f in module.funcs)
        raise TcpError.at(f"no func named '{name}' (funcs: {names})") from None


def optimize_func(func: Func, rules: Sequence[Rule], options: OptOptions,
                  emit: Emitter | None = None, validate: bool = False,
                  inputs: Sequence[np.ndarray] | None = None,
                  on_iteration: Callable[[dict[str, Any]], None] | None = None) -> OptResult:
    """Saturate and extract, emitting the ``egglog``, ``report`` and ``optimized`` stages.

    With ``validate``, the optimized program is run against the original (on ``inputs`` too,
    when given) and refused with an error naming the rules if it differs beyond its class.
    """
    from tcp_rules.egraph.encode import Tables
    from tcp_rules.egraph.saturate import build_text
    from tcp_rules.optimize import optimize, select_rules

    emit = emit or Emitter()
    emit("egglog", lambda: build_text(func, select_rules(rules, options.allow), Tables(),
                                      options.schedule, options.algebra)[0])
    result = optimize(func, rules, options, on_iteration)  # on_iteration: progress
    if validate:
        result.validation = check_translation(result, rules, options, inputs)
    emit("report", result.report.render)
    emit("optimized", lambda: print_func(result.func))
    emit("mlir", lambda: export_mlir(result.func))
    emit_kernels(result.func, options, emit)
    return result


def check_translation(result: OptResult, rules: Sequence[Rule], options: OptOptions,
                      inputs: Sequence[np.ndarray] | None = None) -> Validation:
    """Translation validation of an optimizer result (verify.translation); when the optimized
    program changes an answer, raises a TcpError naming the fewest fired rules that still
    change it (verify.blame)."""
    from tcp_rules.verify.blame import minimal_rules
    from tcp_rules.verify.translation import fired_rules, validate

    fired = fired_rules(result.report.matches, rules)
    v = validate(result.original, result.func, fired, inputs)
    if not v.ok:
        names = {n for n, _ in fired}
        suspects = [r for r in rules if r.name in names]
        found, complete = minimal_rules(result.original, suspects, options, v.failing(), v.mode)
        v = dataclasses.replace(v, blamed=tuple((r.name, r.soundness.kind) for r in found),
                                blame_complete=complete)
        raise TcpError.at(
            f"func {result.original.name}: {v.render()}", result.original.span,
            hint="the optimized program was refused; run without these rules, with --allow "
                 "exact, or with --no-opt, and please report them", stage="validate")
    return v


def export_mlir(func: Func) -> str:
    """The ``mlir`` stage: the func as MLIR, in mlir-tcp's ops, its kernels as
    ``tcp.isolated_group`` regions (frontends/mlir/export.py)."""
    from tcp_rules.frontends.mlir.export import export_func

    return export_func(func)


def emit_kernels(func: Func, options: OptOptions, emit: Emitter) -> None:
    """Emit the ``kernels`` stage: the loop nests ``func`` lowers to (nothing compiled)."""
    from tcp_rules.kernels import format_kernels, kernel_infos  # llvmlite only when used

    emit("kernels", lambda: format_kernels(func, kernel_infos(func, options.cost)))


ENGINES = ("compiled", "reference")


def run_func(func: Func, inputs: Sequence[np.ndarray], engine: str = "compiled",
             emit: Emitter | None = None) -> tuple[np.ndarray, ...]:
    """Run a typed func on input arrays: compiled kernels, or the NumPy reference interpreter.

    Emits the ``llvm`` stage (every kernel's LLVM IR) before compiled code runs.
    """
    if engine not in ENGINES:
        raise TcpError.at(f"unknown engine '{engine}' (engines: {', '.join(ENGINES)})")
    if engine == "compiled":
        from tcp_rules.codegen import emit_llvm  # llvmlite loads only when used

        (emit or Emitter())("llvm", lambda: emit_llvm(func))
    # refused before anything is allocated, with the size it would need
    check_run(func, bind_symbols(func, inputs), engine)
    if engine == "reference":
        return evaluate(func, inputs)
    from tcp_rules.codegen import run_compiled

    return run_compiled(func, inputs)
