"""The trace being recorded: its builder, where in the user's code each op comes from, and
errors that point there.

Every op a traced function applies goes through :func:`apply`, which calls the builder's
``make_apply`` (the one place where ops are applied) with the span of the user's line: the
innermost frame on the stack that is not tcp-rules' tracing code. A type error becomes a
:class:`TcpError` at that line (``model.py:12:9: error: add: ...``, the line and a caret).
"""

from __future__ import annotations

import itertools
import linecache
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from tcp_rules.build import FuncBuilder, Operand, make_apply
from tcp_rules.diagnostics import Source, Span, TcpError
from tcp_rules.ir import Apply
from tcp_rules.ops import OPS, ShapeError
from tcp_rules.types import TensorType

_PACKAGE = Path(__file__).resolve().parent.parent
# The frames a user's line is looked for behind: the tracing package, the numpy-like module
# and the builder (a user's own module in tcp_rules, a benchmark's, still counts as the user's).
_INTERNAL = frozenset(os.path.realpath(p) for p in (
    *(_PACKAGE / "tracing").glob("*.py"), _PACKAGE / "numpy.py", _PACKAGE / "build.py"))
_internal_names: dict[str, bool] = {}
_sources: dict[str, Source] = {}


class Trace:
    """One function being traced: the builder its parameters and ops go to."""

    def __init__(self, name: str):
        self.builder = FuncBuilder(name)


_state = threading.local()


def current() -> Trace | None:
    """The trace this thread is recording, if any."""
    return getattr(_state, "trace", None)


class tracing:
    """Make ``trace`` the current one for the body of a ``with`` statement."""

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self) -> Trace:
        self.outer = current()
        _state.trace = self.trace
        return self.trace

    def __exit__(self, *exc: object) -> None:
        _state.trace = self.outer


def _is_internal(filename: str) -> bool:
    got = _internal_names.get(filename)
    if got is None:
        got = _internal_names[filename] = os.path.realpath(filename) in _INTERNAL
    return got


def _source(filename: str) -> Source:
    src = _sources.get(filename)
    if src is None:
        src = _sources[filename] = Source(filename, "".join(linecache.getlines(filename)))
    return src


def user_frame() -> FrameType | None:
    """The innermost frame outside the tracing code: the user's line that is running."""
    f: FrameType | None = sys._getframe(1)
    while f is not None and _is_internal(f.f_code.co_filename):
        f = f.f_back
    return f


def user_span() -> Span | None:
    """The span of the expression the user's frame is evaluating (its line and columns)."""
    f = user_frame()
    if f is None:
        return None
    pos = next(itertools.islice(f.f_code.co_positions(), f.f_lasti // 2, None), None)
    line, end_line, col, end_col = pos if pos is not None else (f.f_lineno, None, None, None)
    line = line or f.f_lineno
    if col is None or end_col is None:  # no column table (python -X no_debug_ranges)
        return Span(_source(f.f_code.co_filename), line, 1, line, 1)
    return Span(_source(f.f_code.co_filename), line, col + 1, end_line or line, end_col + 1)


def error(message: str, hint: str | None = None) -> TcpError:
    """A TcpError at the user's line (stage ``trace``)."""
    return TcpError.at(message, user_span(), hint=hint, stage="trace")


def active() -> Trace:
    """The current trace; an error when a tcp_rules.numpy function is called outside one."""
    t = current()
    if t is None:
        raise error("tcp_rules.numpy works on the arrays of a function being traced: call it "
                    "inside a function decorated with @tcp_rules.jit")
    return t


def apply(name: str, operands: Sequence[Operand], **attrs: Any) -> Apply:
    """Apply the op ``name`` through the builder; a type error points at the user's line."""
    span = user_span()
    try:
        return make_apply(OPS[name], operands, attrs, span=span)
    except ShapeError as e:
        message = e.message if e.message.startswith(name) else f"{name}: {e.message}"
        raise TcpError.at(message, span, stage="trace") from None


def splat(value: bool | int | float, type_: TensorType) -> Apply:
    """A splat constant of ``type_`` (the builder's make_splat, errors at the user's line)."""
    return apply("splat", [], value=value, shape=type_.dims, dtype=type_.dtype)
