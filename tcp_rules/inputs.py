"""Inputs for running programs: .npz files (read safely) and seeded random arrays."""

from __future__ import annotations

import math
import os
import stat
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.lib import format as npformat

from tcp_rules.diagnostics import TcpError
from tcp_rules.frontends import identifier
from tcp_rules.interpret import concretize
from tcp_rules.ir import Func
from tcp_rules.memory import available_bytes, nbytes, require
from tcp_rules.types import DType, TensorType


def load_inputs(paths: str | Path | Sequence[str | Path], func: Func, *,
                given: Mapping[str, np.ndarray] | None = None,
                aliases: Mapping[str, str] | None = None) -> list[np.ndarray]:
    """One array per parameter of ``func``, by name, from .npz files (never unpickled).

    ``given`` holds arrays known already (an imported model's weights); ``aliases`` maps other
    names of parameters (an ONNX model's input names) to their TCP names.
    """
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    arrays: dict[str, np.ndarray] = dict(given or {})
    names = [p.param for p in func.params]
    for path in files:
        for key, a in read_npz(path).items():
            # a model's tensor name maps to its parameter by the importers' documented rule
            name = (aliases or {}).get(key) or (key if key in names else identifier(key))
            if name in arrays:
                raise TcpError.at(f"{path}: array '{key}' is given twice (parameter {name})")
            arrays[name] = a
    where = " and ".join(map(str, files)) or "the inputs"
    missing = [n for n in names if n not in arrays]
    if missing:
        raise TcpError.at(f"{where} has no array for parameter(s) {', '.join(missing)} of "
                          f"func {func.name} (it has: {', '.join(sorted(arrays)) or 'none'})")
    extra = sorted(set(arrays) - set(names))
    if extra:
        raise TcpError.at(f"{where} has array(s) {', '.join(extra)} that func {func.name} has "
                          f"no parameter for (parameters: {', '.join(names)})")
    return [_as_param(arrays[p.param], p.type) for p in func.params]


def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by name, each header checked before its data is read."""
    _check_regular(path)
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
        zf = data.zip
        assert zf is not None  # open until the with block ends
        avail = available_bytes()
        for member in zf.namelist():
            arrays[member.removesuffix(".npy")] = _read_member(path, zf, member, avail)
    return arrays


def _as_param(a: np.ndarray, t: TensorType) -> np.ndarray:
    """NumPy's .npz format has no bfloat16: it stores such arrays as 2-byte voids (``|V2``),
    which a bf16 parameter reads as the bits they are."""
    if t.dtype is DType.BF16 and a.dtype.kind == "V" and a.dtype.itemsize == 2 \
            and a.dtype.fields is None:
        return a.view(DType.BF16.np_dtype)
    return a


def _check_regular(path: str | Path) -> None:
    # a FIFO would block numpy's open, a device be read from without end
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # np.load reports it
    if not stat.S_ISREG(mode):
        raise TcpError.at(f"cannot read inputs: {path} is not a regular file")


def _read_member(path: str | Path, zf: zipfile.ZipFile, member: str,
                 avail: int) -> np.ndarray:
    """One .npy member: its header read and checked first (never pickled data, and not larger
    than the memory available), then its data."""
    key = member.removesuffix(".npy")
    where = f"{path}: array '{key}'"
    try:
        with zf.open(member) as f:
            try:
                version = npformat.read_magic(f)
            except ValueError:
                raise TcpError.at(f"{where} is not an .npy array (no .npy header); save "
                                  f"arrays with numpy.savez") from None
            if version not in ((1, 0), (2, 0)):
                raise TcpError.at(f"{where} has an .npy header of version {version[0]}."
                                  f"{version[1]}, which is only written for named fields; "
                                  f"save numeric arrays")
            read_header = (npformat.read_array_header_1_0 if version == (1, 0)
                           else npformat.read_array_header_2_0)
            try:
                shape, _, dtype = read_header(f)
            except Exception as e:  # numpy parses the header as Python literals: any error
                raise TcpError.at(f"{where} has a malformed .npy header ({type(e).__name__}: "
                                  f"{e}); the file is damaged or was not written by "
                                  f"numpy.savez") from None
            if dtype.hasobject:
                raise TcpError.at(f"{where} holds Python objects (pickled data), which are "
                                  f"never loaded; save numeric arrays")
            need = math.prod(shape) * dtype.itemsize
            require(need, avail, f"{where} ({dtype}{list(shape)})")
        with zf.open(member) as f:
            return npformat.read_array(f, allow_pickle=False)
    except ValueError as e:  # the data does not match its header (truncated, ...)
        raise TcpError.at(f"{where} is damaged: {e}") from None
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise TcpError.at(f"cannot read array '{key}' from {path}: {e}") from None


def save_results(path: str | Path, results: Sequence[np.ndarray]) -> None:
    """Write results as result0, result1, ... into an .npz, atomically (never half-written)."""
    save_arrays(path, {f"result{i}": r for i, r in enumerate(results)})


def save_arrays(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write named arrays into an .npz, atomically (never half-written)."""
    write_atomically(path, lambda f: np.savez(f, **arrays))  # type: ignore[arg-type]


def write_atomically(path: str | Path, write: Callable[[BinaryIO], object]) -> None:
    """Write a file through a temporary beside it, renamed into place only when complete."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tcpr-", suffix=target.suffix,
                                   dir=target.parent or ".")
    except OSError as e:
        raise TcpError.at(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
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
        lo = 0 if t.dtype.is_unsigned else -100
        return rng.integers(lo, 100, size=shape).astype(t.dtype.np_dtype)
    return rng.random(shape) < 0.5


def random_inputs(func: Func, sizes: Mapping[str, int] | None = None, default_size: int = 8,
                  seed: int = 0) -> list[np.ndarray]:
    """Seeded random inputs for ``func``; symbols take ``sizes`` or ``default_size``."""
    rng = np.random.default_rng(seed)
    symbols = sorted(frozenset().union(*(p.type.symbols for p in func.params)))
    env = {s: (sizes or {}).get(s, default_size) for s in symbols}
    types = [concretize(p.type, env, p.span) for p in func.params]
    avail = available_bytes()
    for t, p in zip(types, func.params, strict=True):
        require(nbytes(t), avail, f"random input '{p.param}' ({t})", p.span)
    require(sum(map(nbytes, types)), avail, f"the random inputs of func {func.name}", func.span)
    return [random_array(t, rng) for t in types]
