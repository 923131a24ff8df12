"""Inputs for running programs: .npz files (read safely) and seeded random arrays."""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import concretize
from tcp_rules.ir import Func
from tcp_rules.types import TensorType


def load_inputs(path: str | Path, func: Func) -> list[np.ndarray]:
    """The arrays of an .npz file, one per parameter of ``func`` by name; never unpickles."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise TcpError.at(f"cannot read inputs: {path} does not exist") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise TcpError.at(f"cannot read inputs from {path}: {e} (expected an .npz file "
                          f"written by numpy.savez)") from None
    if not isinstance(arrays, dict):
        raise TcpError.at(f"{path} holds a single array; expected an .npz with one array "
                          f"per parameter")
    names = [p.param for p in func.params]
    missing = [n for n in names if n not in arrays]
    if missing:
        raise TcpError.at(f"{path} has no array for parameter(s) {', '.join(missing)} of "
                          f"func {func.name} (it has: {', '.join(sorted(arrays)) or 'none'})")
    extra = sorted(set(arrays) - set(names))
    if extra:
        raise TcpError.at(f"{path} has array(s) {', '.join(extra)} that func {func.name} has no "
                          f"parameter for (parameters: {', '.join(names)})")
    return [arrays[n] for n in names]


def save_results(path: str | Path, results: Sequence[np.ndarray]) -> None:
    """Write results as result0, result1, ... into an .npz, atomically (never half-written)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".tcpr-", suffix=".npz", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{f"result{i}": r for i, r in enumerate(results)})  # type: ignore[arg-type]
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def random_array(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    """A random array of concrete type ``t``: normal floats, small integers, fair booleans."""
    shape = t.shape
    assert shape is not None, f"type {t} is not concrete"
    if t.dtype.is_float:
        return rng.standard_normal(shape).astype(t.dtype.np_dtype)
    if t.dtype.is_int:
        return rng.integers(-100, 100, size=shape).astype(t.dtype.np_dtype)
    return rng.random(shape) < 0.5


def random_inputs(func: Func, sizes: Mapping[str, int] | None = None, default_size: int = 8,
                  seed: int = 0) -> list[np.ndarray]:
    """Seeded random inputs for ``func``; symbols take ``sizes`` or ``default_size``."""
    rng = np.random.default_rng(seed)
    symbols = sorted(frozenset().union(*(p.type.symbols for p in func.params)))
    env = {s: (sizes or {}).get(s, default_size) for s in symbols}
    return [random_array(concretize(p.type, env, p.span), rng) for p in func.params]
