"""Start-up: the CLI imports only what a command needs, and the standard rule library and the
parser tables come from a cache that gives exactly what loading afresh gives.

Speed itself is measured by ``tcpr bench --suite startup``, never asserted here.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tcp_rules.diskcache import write_entry
from tcp_rules.grammar.parser import _grammar_cache
from tcp_rules.ops import OpDef
from tcp_rules.resources import example_path
from tcp_rules.rules import libcache
from tcp_rules.rules.library import (
    TYPE_BUDGET,
    RuleLibrary,
    load_rules,
    standard_library_files,
)

ROOT = Path(__file__).parent.parent
HEAVY = ("egglog", "llvmlite", "hypothesis", "scipy", "onnx", "black")

RULES = """\
ruleset mine

# Adding -0.0 is the identity.
rule mine-add-negzero: add(x, -0.0) => x
  example (x: f32[2, 3]): add(x, -0.0) => x

rule mine-tt: transpose(transpose(x, perm=[1, 0]), perm=[1, 0]) => x  where rank(x) == 2
"""


def same(a: Any, b: Any, where: str = "lib", seen: set[tuple[int, int]] | None = None) -> None:
    """``a`` and ``b`` are the same value in every field, those that ``==`` leaves out (spans,
    their sources, coverage) included; floats bit for bit; ops are the op table's own."""
    seen = set() if seen is None else seen
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, OpDef):
        assert a is b, f"{where}: op {a.name} is not the op table's"
    elif dataclasses.is_dataclass(a):
        if (id(a), id(b)) in seen:  # shared objects (a file's Source) are compared once
            return
        seen.add((id(a), id(b)))
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}", seen)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), f"{where}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]", seen)
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys differ"
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]", seen)
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b), f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def fresh(files: list[Path], check: bool) -> RuleLibrary:
    return load_rules(files, check=check, type_budget=TYPE_BUDGET)


def cached(files: list[Path], check: bool, calls: list[int] | None = None) -> RuleLibrary:
    """The library through the cache; ``calls`` counts the builds (cache misses)."""
    def build() -> RuleLibrary:
        if calls is not None:
            calls.append(1)
        return fresh(files, check)

    return libcache.cached_library(files, check, TYPE_BUDGET, build)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TCPR_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def rule_file(tmp_path: Path) -> Path:
    path = tmp_path / "mine.tcpr"
    path.write_text(RULES)
    return path


def test_standard_library_from_the_cache_is_the_fresh_one(cache: Path) -> None:
    files = standard_library_files()
    built = fresh(files, check=False)
    first = libcache.cached_library(files, False, TYPE_BUDGET, lambda: built)
    assert first is built
    assert list((cache / "rules").iterdir()), "the entry was not written"

    def refuse() -> RuleLibrary:
        raise AssertionError("the entry was not used")

    loaded = libcache.cached_library(files, False, TYPE_BUDGET, refuse)
    assert loaded == built and loaded is not built
    same(loaded, built)
    assert loaded.rule("add-negzero").span.where == built.rule("add-negzero").span.where


def test_checked_library_keeps_its_coverage(cache: Path, rule_file: Path) -> None:
    calls: list[int] = []
    first = cached([rule_file], True, calls)
    again = cached([rule_file], True, calls)
    assert len(calls) == 1
    assert set(again.coverage) == {"mine-add-negzero", "mine-tt"}
    same(again, first)
    # the unchecked load is an entry of its own (it has no coverage)
    assert cached([rule_file], False, calls).coverage == {} and len(calls) == 2


def test_corrupt_entry_is_rebuilt(cache: Path, rule_file: Path) -> None:
    calls: list[int] = []
    first = cached([rule_file], False, calls)
    (entry,) = (cache / "rules").iterdir()
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    same(cached([rule_file], False, calls), first)
    assert len(calls) == 2
    cached([rule_file], False, calls)  # rewritten whole
    assert len(calls) == 2
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    same(cached([rule_file], False, calls), first)
    assert len(calls) == 3


def test_changed_file_invalidates(cache: Path, rule_file: Path) -> None:
    calls: list[int] = []
    assert len(cached([rule_file], False, calls).rules) == 2
    rule_file.write_text(RULES + "rule mine-mul-one: mul(x, 1) => x\n")
    lib = cached([rule_file], False, calls)
    assert len(calls) == 2 and lib.rules[-1].name == "mine-mul-one"
    assert len(list((cache / "rules").iterdir())) == 1  # rebuilt in place
    assert libcache.library_key([rule_file], False, TYPE_BUDGET) != libcache.library_key(
        [rule_file], True, TYPE_BUDGET)


def test_unwritable_cache_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     rule_file: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TCPR_CACHE_DIR", str(blocker / "cache"))  # cannot be a folder
    calls: list[int] = []
    same(cached([rule_file], False, calls), cached([rule_file], False, calls))
    assert len(calls) == 2
    assert list(tmp_path.glob(".tmp*")) == []
    assert _grammar_cache("tcp", "module") is False


class _Calls:
    """Pickles as a call of os.getpid: what a forged entry could try to run."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return os.getpid, ()


def test_entry_may_name_only_tcp_rules_classes(cache: Path, rule_file: Path) -> None:
    calls: list[int] = []
    cached([rule_file], False, calls)
    key = libcache.library_key([rule_file], False, TYPE_BUDGET)
    entry = libcache.entry_path([rule_file], False, TYPE_BUDGET)
    # a well-formed entry (right key and checksum) whose pickle calls a function
    write_entry(entry, libcache.MAGIC, key + pickle.dumps(_Calls()))
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        libcache._Unpickler(io.BytesIO(pickle.dumps(_Calls()))).load()
    assert len(cached([rule_file], False, calls).rules) == 2 and len(calls) == 2


def test_cli_and_library_imports() -> None:
    """Importing the CLI and checking a program load none of the heavy packages, saturation
    only egglog's bindings; the code the library cache's key covers (libcache.CODE) is all of
    the library's import closure."""
    script = f"""
import json, sys
import tcp_rules.rules.library
library = sorted(m for m in sys.modules if m.startswith("tcp_rules."))
import tcp_rules.cli
cli = sorted(sys.modules)
code = tcp_rules.cli.main(["check", "-q", {str(example_path("softmax"))!r}])
check = sorted(sys.modules)
import tcp_rules.egraph.saturate
saturate = sorted(sys.modules)
import egglog
from egglog import bindings
shared = bindings is tcp_rules.egraph.saturate.bindings and hasattr(egglog, "EGraph")
print(json.dumps({{"library": library, "cli": cli, "check": check, "code": code,
                  "saturate": saturate, "shared": shared}}))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True).stdout
    found = json.loads(out)
    assert found["code"] == 0
    for stage in ("cli", "check"):
        loaded = {m.split(".")[0] for m in found[stage]}
        assert not loaded & set(HEAVY), f"{stage} imported {sorted(loaded & set(HEAVY))}"
    # saturation loads egglog's bindings alone; egglog's Python API loads later around them
    assert "egglog.bindings" in found["saturate"] and "egglog" not in found["saturate"]
    assert not {m.split(".")[0] for m in found["saturate"]} & {"black", "hypothesis"}
    assert found["shared"]
    covered = {p.resolve() for p in libcache.code_files()}
    package = Path(libcache.__file__).resolve().parent.parent
    for module in found["library"]:
        rel = module.removeprefix("tcp_rules.").replace(".", "/")
        source = next(p for p in (package / f"{rel}.py", package / rel / "__init__.py")
                      if p.exists())
        assert source.resolve() in covered, f"{module} decides rules but is not in CODE"
