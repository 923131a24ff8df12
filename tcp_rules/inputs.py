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
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise TcpError.at(f"cannot read inputs: {path} does not exist") from None
    except ValueError:  # neither .npy nor .npz: numpy would only try to unpickle it
        raise TcpError.at(f"cannot read inputs: {path} is not an .npz file (expected one "
                          f"written by numpy.savez)") from None
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise TcpError.at(f"cannot read inputs from {path}: {e} (expected an .npz file "
                          f"written by numpy.savez)") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise TcpError.at(f"{path} holds a single array; expected an .npz with one array "
                          f"per parameter")
    arrays: dict[str, np.ndarray] = {}
    with loaded as data:
        for k in data.files:
            try:
                arrays[k] = data[k]
            except ValueError:
                raise TcpError.at(f"{path}: array '{k}' holds Python objects (pickled data), "
                                  f"which are never loaded; save numeric arrays") from None
            except (OSError, zipfile.BadZipFile, EOFError) as e:
                raise TcpError.at(f"cannot read array '{k}' from {path}: {e}") from None
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
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tcpr-", suffix=".npz", dir=target.parent or ".")
    except OSError as e:
        raise TcpError.at(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{f"result{i}": r for i, r in enumerate(results)})  # type: ignore[arg-type]
        os.replace(tmp, target)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise TcpError.at(f"cannot write {path}: {e.strerror or e}") from None
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
