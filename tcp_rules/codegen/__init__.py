"""Code generation: TCP funcs -> kernels (loop nests) -> LLVM IR -> native code on NumPy arrays.

Public entry points (llvmlite is imported only when one is used):

- :func:`compile_func` / :class:`CompiledFunc`: compile once, call many times;
- :func:`run_compiled`: compile (cached) and run, for ``tcpr run --engine compiled``;
- :func:`emit_llvm`: the LLVM IR of every kernel, for ``--emit llvm``;
- :func:`run_benchmarks`: the benchmark suite, for ``tcpr bench``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tcp_rules.codegen.bench import run_benchmarks
    from tcp_rules.codegen.runtime import (
        CompiledFunc,
        compile_func,
        compile_kernel_func,
        emit_llvm,
        run_compiled,
    )

_LAZY = {"CompiledFunc": "runtime", "compile_func": "runtime", "compile_kernel_func": "runtime",
         "emit_llvm": "runtime", "run_compiled": "runtime", "run_benchmarks": "bench"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"tcp_rules.codegen.{_LAZY[name]}"), name)
    raise AttributeError(name)


__all__ = ["CompiledFunc", "compile_func", "compile_kernel_func", "emit_llvm", "run_benchmarks",
           "run_compiled"]
