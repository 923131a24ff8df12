"""Golden diagnostics for .tcp programs: every error a user can make, rendered exactly.

Each ``tests/goldens/diagnostics/programs/NAME.tcp`` is one small bad program; ``NAME.err`` is
what ``TcpError.render()`` prints for it. Adding a ``.tcp`` file adds a case (write it, run
``pytest --update-goldens``, then read the new ``.err`` like code).

A program that type-checks must start with a header naming the input arrays to run it on,
``# inputs: a=f32[3, 4] b=f32[5, 4]``; its case is the run-time error ``evaluate`` raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.elaborate import load_program
from tcp_rules.interpret import evaluate
from tcp_rules.types import DType

CASE_DIR = Path(__file__).parent / "goldens" / "diagnostics" / "programs"
CASES = sorted(CASE_DIR.glob("*.tcp"))
INPUTS = re.compile(r"^# inputs:(.*)$", re.MULTILINE)
ARRAY = re.compile(r"(\w+)=(\w+)\[([\d, ]*)\]")
HEAD = re.compile(r"^(?P<file>[\w.]+\.tcp):(?P<line>\d+):(?P<col>\d+): error: \S")


def header_inputs(text: str) -> list[np.ndarray]:
    """Zero arrays as listed by the case's ``# inputs:`` header."""
    m = INPUTS.search(text)
    assert m, "this program type-checks, so it needs an '# inputs: name=f32[3, 4] ...' header"
    arrays = []
    for _, dtype, dims in ARRAY.findall(m.group(1)):
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
        arrays.append(np.zeros(shape, DType.parse(dtype).np_dtype))
    return arrays


def diagnose(path: Path) -> TcpError:
    """The error the program at ``path`` raises when type-checked, or else when run."""
    text = path.read_text()
    source = Source(path.name, text)  # diagnostics show the file name, not the full path
    try:
        module = load_program(source)
    except TcpError as e:
        return e
    func = module.func()
    try:
        evaluate(func, header_inputs(text))
    except TcpError as e:
        assert e.stage == "run"
        return e
    raise AssertionError(f"{path.name} type-checks and runs without an error")


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 18
    errs = {p.stem for p in CASE_DIR.glob("*.err")}
    assert errs <= {p.stem for p in CASES}, "an .err golden has lost its .tcp input"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_program_diagnostic(path: Path, golden: Callable[[str, str], None]) -> None:
    error = diagnose(path)
    rendered = error.render()
    golden(f"diagnostics/programs/{path.stem}.err", rendered + "\n")

    # Every diagnostic is positioned in the file it is about, and its excerpt is that line.
    lines = path.read_text().splitlines()
    for diag in error.diagnostics:
        text = diag.render()
        m = HEAD.match(text)
        assert m, f"diagnostic does not start with '{path.name}:LINE:COL: error:':\n{text}"
        assert m["file"] == path.name
        line, col = int(m["line"]), int(m["col"])
        assert 1 <= line <= max(len(lines), 1)
        if line <= len(lines) and lines[line - 1]:
            excerpt, caret = text.splitlines()[1:3]
            assert excerpt == "  " + lines[line - 1]
            assert caret.index("^") == col + 1  # two spaces of indent, 1-based column
    assert "Traceback" not in rendered


def test_symbol_conflict_names_both_inputs() -> None:
    error = diagnose(CASE_DIR / "symbol_conflict.tcp")
    message = error.diagnostics[0].message
    assert "symbol N is bound to 3 by input 'a'" in message
    assert "input 'b' has 5" in message


def test_redefinition_points_at_the_first_definition() -> None:
    error = diagnose(CASE_DIR / "redefinition.tcp")
    (diag,) = error.diagnostics
    assert diag.notes and diag.notes[0][0] == "first defined here"
    first = diag.notes[0][1]
    assert first is not None and (first.line, first.col) == (2, 3)


def test_independent_errors_are_all_reported_once() -> None:
    error = diagnose(CASE_DIR / "several_errors.tcp")
    messages = [d.message for d in error.diagnostics]
    assert messages == ["unknown op 'sigmod'", "undefined name 'q'"]


@pytest.mark.parametrize("text", [
    "func f(x: f32[N]) -> f32[N] {\n  return add(x, true)\n}\n",
    "func f(c: i1[N], x: f32[N]) -> f32[N] {\n  return select(true, x, -inf)\n}\n",
    "func f(x: i32[N]) -> i32[N] {\n  return add(x, 2.0)\n}\n",
    "func f(x: i64[N]) -> i64[N] {\n  return add(x, -9223372036854775808)\n}\n",
    "func f(c: i1[N]) -> i1[N] {\n  return select(c, 1, false)\n}\n",
])
def test_literals_that_fit_their_context_are_accepted(text: str) -> None:
    load_program(Source("ok.tcp", text))
