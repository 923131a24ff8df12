"""A live progress line on stderr, for commands that take a while (verify, check, opt).

It is drawn only when stderr is a terminal, or when forced with ``TCPR_PROGRESS=1``
(``TCPR_PROGRESS=0`` turns it off), so that logs, pipes and ``--json`` output never see it;
it goes to stderr only, and is cleared before anything is printed to stdout, so the two never
mix on a terminal.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO


def enabled(stream: TextIO | None = None) -> bool:
    """Whether to draw progress on ``stream`` (stderr by default)."""
    forced = os.environ.get("TCPR_PROGRESS", "").strip().lower()
    if forced in ("1", "yes", "true", "always"):
        return True
    if forced in ("0", "no", "false", "never"):
        return False
    stream = stream if stream is not None else sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """One live line: ``update`` redraws it (at most ``rate`` times a second), ``clear``
    removes it, ``close`` removes it for good. With ``delay``, nothing is drawn until that
    many seconds have passed (quick commands print nothing extra). With ``tick``, a thread
    redraws the line every ``tick`` seconds from ``status()``, for work that reports rarely.
    """

    def __init__(self, label: str, *, delay: float = 0.0, rate: float = 10.0,
                 stream: TextIO | None = None, force: bool | None = None,
                 tick: float | None = None, status: Callable[[], str] | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.on = enabled(self.stream) if force is None else force
        self.label, self.delay, self.min_gap = label, delay, 1.0 / rate
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.count = 0  # items done, for step()
        self.text = ""
        self.shown = False
        self.lock = threading.Lock()
        self.status = status
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        if self.on and tick is not None and status is not None:
            self.thread = threading.Thread(target=self._tick, args=(tick,), daemon=True)
            self.thread.start()

    def _tick(self, every: float) -> None:
        assert self.status is not None
        while not self.stop.wait(every):
            self.update(self.status(), force=True)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def update(self, text: str, *, force: bool = False) -> None:
        """Show ``label: text`` (throttled unless ``force``)."""
        if not self.on:
            return
        with self.lock:
            self.text = text
            now = time.monotonic()
            if now - self.start < self.delay or (not force and now - self.last_draw
                                                  < self.min_gap):
                return
            self.last_draw = now
            self._draw()

    def step(self, total: int, what: str) -> None:
        """One more of ``total`` items done: ``n/total what``."""
        self.count += 1
        self.update(f"{self.count}/{total} {what}", force=True)

    def _draw(self) -> None:
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        line = f"{self.label}: {self.text}"
        if len(line) > width:
            line = line[:width - 1] + "…"
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """Remove the line (before printing something else to the terminal)."""
        if not self.on:
            return
        with self.lock:
            if self.shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.shown = False

    def print(self, text: str, file: TextIO | None = None) -> None:
        """Print ``text`` (to stdout by default) above the live line, then redraw it."""
        self.clear()
        print(text, file=file or sys.stdout, flush=True)
        if self.on and self.text and time.monotonic() - self.start >= self.delay:
            with self.lock:
                self._draw()

    def close(self) -> None:
        """Stop any ticking and remove the line for good."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        self.clear()
        self.on = False

    @contextlib.contextmanager
    def above(self) -> Iterator[None]:
        """Clear the line around output printed by code that does not know of it."""
        self.clear()
        try:
            yield
        finally:
            self.clear()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def saturation_progress(func_name: str) -> Iterator[Callable[[dict[str, Any]], None]]:
    """A live line for optimizing that lasts more than a second: the time so far, and the
    iteration and e-graph size the optimizer last reported to the hook this yields."""
    seen: dict[str, Any] = {}

    def status() -> str:
        it = f", iteration {seen['index']}, {seen['enodes']} e-nodes" if seen else ""
        return f"func {func_name}: {bar.elapsed():.1f} s{it}"

    bar = Progress("tcpr opt", delay=1.0, tick=0.2, status=status)
    try:
        yield seen.update
    finally:
        bar.close()
