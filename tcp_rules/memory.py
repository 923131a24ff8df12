"""Memory checks before allocation: an array that cannot fit is refused with the size it needs.

NumPy and the compiled engine allocate results and intermediates up front; on Linux a
large-enough request is often granted lazily and then kills the process (or the host) when
it is written. So sizes are computed from the types, with symbolic dims bound from the inputs,
and compared with the memory available before anything runs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

from tcp_rules.diagnostics import Span, TcpError
from tcp_rules.interpret import concretize
from tcp_rules.ir import Apply, Func
from tcp_rules.ops import IDENTITY_OPS
from tcp_rules.types import TensorType


def available_bytes() -> int:
    """Memory this process may still take: MemAvailable, capped by a cgroup v2 limit."""
    avail = _meminfo_available()
    limit = _cgroup_left()
    if limit is not None:
        avail = min(avail, limit) if avail is not None else limit
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return 1 << 62  # unknown: let the allocator decide
    return avail


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_left() -> int | None:
    base = Path("/sys/fs/cgroup")
    try:
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((base / "memory.current").read_text()))
    except (OSError, ValueError):
        return None


def format_bytes(n: int | float) -> str:
    """``n`` bytes for people: 1.5 GiB, 12.0 MiB, 512 B."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def nbytes(t: TensorType) -> int:
    """The bytes an array of concrete type ``t`` takes (Python ints: never overflows)."""
    assert t.shape is not None
    return math.prod(t.shape) * t.dtype.np_dtype.itemsize


def require(needed: int, available: int, what: str, span: Span | None = None) -> None:
    """TcpError unless ``needed`` bytes fit in ``available``."""
    if needed > available:
        raise TcpError.at(f"{what} needs {format_bytes(needed)} of memory, but only "
                          f"{format_bytes(available)} is available", span,
                          hint="run with smaller inputs or sizes", stage="run")


def check_run(func: Func, env: Mapping[str, int], engine: str) -> None:
    """Refuse to run ``func`` when its arrays cannot fit, symbols bound as in ``env``.

    The reference engine keeps every array it computes until it returns; the compiled engine
    allocates the result and temporary buffers of its plan (values fused into a kernel are
    never materialized). Each array alone, then all of them together, must fit.
    """
    arrays: list[tuple[TensorType, Span | None, str]] = []  # type, where made, by what
    if engine == "reference":
        arrays = [(t, v.span, f"{v.op.name} makes {t}, which") for v in func.values()
                  if isinstance(v, Apply) and v.op.name not in IDENTITY_OPS  # no new array
                  for t in [concretize(v.type, env, v.span)]]
    else:
        from tcp_rules.codegen.runtime import plan_of  # llvmlite only for the compiled engine

        plan = plan_of(func)  # lowered once: run_compiled reuses it
        # (a step of sibling products writes several: the last of its values are theirs)
        made_by = {plan.root(o): v for st in plan.steps
                   for o, v in zip(st.outputs, st.values[-len(st.outputs):], strict=False)}
        used = {plan.root(i) for st in plan.steps for i in st.buffers}
        for i, b in enumerate(plan.buffers):
            # (a temporary no step uses, such as a product a row pass reads in its matmul's
            # scratch, is never allocated)
            if b.kind == "result" or (b.kind == "temp" and i in used):
                v = made_by.get(i)
                t = concretize(TensorType(b.dtype, b.dims), env, func.span)
                arrays.append((t, v.span, f"{v.op.name} makes {t}, which")
                              if isinstance(v, Apply) else
                              (t, func.span, f"a result of func {func.name}, {t},"))
    avail = available_bytes()
    for t, span, what in arrays:  # one array alone too large: point at what makes it
        require(nbytes(t), avail, what, span)
    require(sum(nbytes(t) for t, _, _ in arrays), avail,
            f"func {func.name} ({len(arrays)} arrays together)", func.span)
