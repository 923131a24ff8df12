"""The standard rule library, kept on disk: parsed, resolved and checked once per version.

Loading the library's files takes seconds (parsing, resolving every rule family, and with
``check`` the type checks over instances); every ``tcpr opt`` needs the result. An entry holds
the loaded :class:`RuleLibrary` for one set of files and options (``check``, ``type_budget``),
under the cache root of :mod:`tcp_rules.diskcache`, and the key it was built for: a hash of the
files' paths and contents, of the sources of the code that turns them into rules
(:data:`CODE`), and of the versions of Python, lark and NumPy. An entry whose key differs is
rebuilt in place, so the cache keeps one entry per library location and options.

The format is a pickle behind a magic line and a sha256 of the payload. Ops are stored by name
and looked up in the op table when loaded (their functions do not pickle), and the unpickler
builds only tcp-rules' dataclasses and enums, ``pathlib`` paths and that op lookup: an entry
can name no other callable. Anything that fails (a checksum, an unpickling error, a loaded
value that is not a RuleLibrary) counts as a miss.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import io
import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcp_rules.diskcache import cache_dir, read_entry, write_entry
from tcp_rules.ops import OPS, OpDef

if TYPE_CHECKING:
    from tcp_rules.rules.library import RuleLibrary

MAGIC = b"TCPR-RULES-1\n"
PACKAGE = Path(__file__).resolve().parent.parent
# What decides the rules loaded from given files: the import closure of rules.library inside
# tcp-rules (a test checks that this covers it). Folders stand for their .py and .lark files.
CODE = ("build.py", "diagnostics.py", "diskcache.py", "elaborate.py", "ir.py", "printer.py",
        "resources.py", "sorts.py", "types.py", "grammar", "ops", "rules")


def code_files() -> list[Path]:
    """The source files whose contents are part of every key."""
    out: list[Path] = []
    for name in CODE:
        p = PACKAGE / name
        out.extend(sorted([*p.glob("*.py"), *p.glob("*.lark")]) if p.is_dir() else [p])
    return out


def library_key(files: Sequence[Path], check: bool, type_budget: int) -> bytes:
    """The digest an entry must carry to be used for loading ``files`` with these options."""
    import lark
    import numpy

    h = hashlib.sha256(MAGIC)
    h.update(f"{sys.version}\n{lark.__version__}\n{numpy.__version__}\n"
             f"{check}\n{type_budget}\n".encode())
    for f in code_files():
        _add_file(h, f)
    for f in files:
        _add_file(h, f)
    return h.digest()


def _add_file(h: Any, f: Path) -> None:
    data = f.read_bytes()
    h.update(f"{f}\n{len(data)}\n".encode())
    h.update(data)


def entry_path(files: Sequence[Path], check: bool, type_budget: int) -> Path:
    """Where the entry for these files and options lives (named by location, not contents)."""
    where = "\n".join([str(check), str(type_budget), *map(str, files)])
    return cache_dir() / "rules" / f"{hashlib.sha256(where.encode()).hexdigest()[:32]}.pickle"


def cached_library(files: Sequence[Path], check: bool, type_budget: int,
                   build: Callable[[], RuleLibrary]) -> RuleLibrary:
    """The library ``build`` makes from ``files``, from the cache when an entry for exactly
    these file contents, code and options is there; built and stored otherwise."""
    try:
        key = library_key(files, check, type_budget)
    except OSError:  # a file cannot be read: loading reports it
        return build()
    path = entry_path(files, check, type_budget)
    found = _load(path, key)
    if found is not None:
        return found
    lib = build()
    data = _dump(lib)
    if data is not None:
        write_entry(path, MAGIC, key + data)
    return lib


def _load(path: Path, key: bytes) -> RuleLibrary | None:
    from tcp_rules.rules.library import RuleLibrary

    payload = read_entry(path, MAGIC)
    if payload is None or payload[:len(key)] != key:
        return None
    try:
        lib = _Unpickler(io.BytesIO(payload[len(key):])).load()
    except Exception:  # any damage the checksum missed is a miss: rebuilt
        return None
    return lib if isinstance(lib, RuleLibrary) else None


def _dump(lib: RuleLibrary) -> bytes | None:
    buf = io.BytesIO()
    try:
        _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(lib)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None  # something in the rules that cannot be stored: loaded afresh each time
    return buf.getvalue()


def op_named(name: str) -> OpDef:
    """The op table's op ``name`` (how entries refer to ops)."""
    return OPS[name]


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, OpDef):
            if OPS.get(obj.name) is not obj:  # not the table's own op: cannot be named
                raise pickle.PicklingError(f"op {obj.name} is not the op table's")
            return op_named, (obj.name,)
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    """Builds only tcp-rules dataclasses and enums, pathlib paths and :func:`op_named`: a
    forged entry can name no function and no class that does anything when made."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == (__name__, "op_named"):
            return op_named
        if module.startswith("tcp_rules.") or (module, name) in _PATHS:
            found = super().find_class(module, name)
            if isinstance(found, type) and (dataclasses.is_dataclass(found)
                                            or issubclass(found, (enum.Enum, Path))):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a rule cache entry")


_PATHS = {("pathlib", "PosixPath"), ("pathlib", "WindowsPath")}
