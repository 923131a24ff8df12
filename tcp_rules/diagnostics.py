"""Source spans, diagnostics and the error type that carries them to the CLI.

Errors are values with spans until the CLI prints them: ``file:line:col: error: message``, the
source line and a caret under the span, then optional notes and a hint.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Source:
    """A named text (a file's contents, or a string given on the command line)."""

    name: str
    text: str

    def line(self, lineno: int) -> str:
        lines = self.text.splitlines()
        return lines[lineno - 1] if 0 < lineno <= len(lines) else ""


@dataclass(frozen=True)
class Span:
    """A region of a source: 1-based line and column of its start and (exclusive) end."""

    source: Source = field(compare=False, repr=False)
    line: int
    col: int
    end_line: int
    end_col: int

    @property
    def where(self) -> str:
        return f"{self.source.name}:{self.line}:{self.col}"

    @staticmethod
    def point(source: Source, line: int, col: int, width: int = 1) -> Span:
        return Span(source, line, col, line, col + width)


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in user input, positioned when it comes from a file."""

    message: str
    span: Span | None = None
    severity: str = "error"
    notes: tuple[tuple[str, Span | None], ...] = ()
    hint: str | None = None

    def render(self) -> str:
        """The diagnostic as the CLI prints it."""
        head = f"{self.severity}: {self.message}"
        out = [f"{self.span.where}: {head}" if self.span else head]
        if self.span:
            out.extend(_excerpt(self.span))
        for text, span in self.notes:
            out.append(f"{span.where}: note: {text}" if span else f"note: {text}")
            if span:
                out.extend(_excerpt(span))
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)


def _excerpt(span: Span) -> list[str]:
    text = span.source.line(span.line)
    if not text:
        return []
    end = span.end_col if span.end_line == span.line else len(text) + 1
    width = max(1, min(end, len(text) + 1) - span.col)
    return [f"  {text}", "  " + " " * (span.col - 1) + "^" * width]


class TcpError(Exception):
    """User-facing failure: one or more diagnostics, raised by any stage."""

    def __init__(self, diagnostics: Sequence[Diagnostic] | Diagnostic, stage: str = ""):
        diags = (diagnostics,) if isinstance(diagnostics, Diagnostic) else tuple(diagnostics)
        super().__init__("\n".join(d.render() for d in diags))
        self.diagnostics = diags
        self.stage = stage

    @staticmethod
    def at(message: str, span: Span | None = None, *, hint: str | None = None,
           notes: Iterable[tuple[str, Span | None]] = (), stage: str = "") -> TcpError:
        """A single-diagnostic error."""
        return TcpError(Diagnostic(message, span, hint=hint, notes=tuple(notes)), stage)

    def render(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)


class DiagnosticBag:
    """Collects diagnostics so a stage can report every independent error in one go."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def error(self, message: str, span: Span | None = None, *, hint: str | None = None,
              notes: Iterable[tuple[str, Span | None]] = ()) -> None:
        self.items.append(Diagnostic(message, span, hint=hint, notes=tuple(notes)))

    def raise_if_any(self, stage: str = "") -> None:
        if self.items:
            raise TcpError(sorted(self.items, key=_order), stage)


def _order(d: Diagnostic) -> tuple[str, int, int]:
    return (d.span.source.name, d.span.line, d.span.col) if d.span else ("", 0, 0)
