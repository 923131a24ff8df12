"""The bundled data: the standard rule library and the example programs, found by name."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"


def example_paths() -> list[Path]:
    """The bundled example programs, sorted by name."""
    return sorted((DATA / "examples").glob("*.tcp"))


def example_path(name: str) -> Path:
    """The bundled example called ``name`` (with or without .tcp)."""
    return DATA / "examples" / (name if name.endswith(".tcp") else f"{name}.tcp")


def rules_dir() -> Path:
    """The directory of the standard rule library."""
    return DATA / "rules"
