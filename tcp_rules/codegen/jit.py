"""From LLVM IR text to callable machine code: optimization, object code, caching, loading.

Each kernel becomes one module: verified, optimized by the new pass builder at speed level 3 with
loop vectorization for the host CPU (name and features), compiled to an object file by the target
machine, and loaded into one process-wide MCJIT engine that lives as long as the process (its
function pointers are handed out to callers, so it must never be collected).

Object files are cached in memory and on disk under ``$TCPR_CACHE_DIR`` (default
``$XDG_CACHE_HOME/tcp-rules`` or ``~/.cache/tcp-rules``), keyed by a hash of the kernel's canonical
text, the code generator's sources and the target. A cache entry carries a checksum of its
payload; an entry that fails it (truncated, corrupt) is rebuilt and rewritten.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from tcp_rules.ops import OPS

_MAGIC = b"TCPK1\n"
# The sources that decide a kernel's machine code: editing one invalidates every cache entry.
_SOURCES = ("kernel.py", "irbase.py", "llvm_ops.py", "mathlib.py", "mathtable.py", "scopes.py",
            "stash.py", "emit.py", "matmul.py", "jit.py")
_lock = threading.RLock()


@dataclass
class JitStats:
    """Counters and timings, for the benchmark report."""

    compiled: int = 0
    disk_hits: int = 0
    memory_hits: int = 0
    compile_seconds: list[float] = field(default_factory=list)
    load_seconds: list[float] = field(default_factory=list)


STATS = JitStats()


@cache
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm:
        llvm.load_library_permanently(libm)


@cache
def host() -> tuple[str, str, str]:
    """(triple, cpu name, cpu features) of this machine."""
    _init()
    return (llvm.get_process_triple(), llvm.get_host_cpu_name(),
            llvm.get_host_cpu_features().flatten())


def has_feature(name: str) -> bool:
    """Whether the host CPU has feature ``name`` (avx512f, avx2, fma...)."""
    return f"+{name}" in host()[2].split(",")


def target_machine() -> llvm.TargetMachine:
    """A fresh target machine for the host (an engine takes ownership of the one it gets)."""
    triple, cpu, features = host()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="static",
                                        codemodel="jitdefault")


@cache
def fingerprint() -> str:
    """Hash of everything that decides the machine code besides the kernel itself."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in _SOURCES:
        p = here / name
        if p.exists():
            h.update(p.read_bytes())
    # The op table's flops decide what a kernel stashes (stash.py).
    h.update(repr(sorted((n, op.cost.flops_per_element) for n, op in OPS.items())).encode())
    h.update(repr(host()).encode())
    h.update(llvmlite.__version__.encode())
    return h.hexdigest()


def cache_key(kernel_text: str) -> str:
    """The cache key of a kernel: its canonical text, the codegen sources and the target."""
    return hashlib.sha256((fingerprint() + "\n" + kernel_text).encode()).hexdigest()


def cache_dir() -> Path:
    """Where compiled kernels are kept: $TCPR_CACHE_DIR, else the user's cache directory."""
    env = os.environ.get("TCPR_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tcp-rules"


def _optimize(ir_text: str, vectorize: bool) -> tuple[llvm.ModuleRef, llvm.TargetMachine]:
    _init()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    tm = target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    # Hand-vectorized code (matmul) gains nothing from the loop vectorizer and compiles faster
    # without it; unrolling stays on (the matmul's K loop needs it).
    pto.loop_vectorization = vectorize
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    # Vector variants marked alwaysinline (mathtable) are called only once the vectorizer has
    # widened their scalar functions' calls: inline them now. They were kept alive for the
    # vectorizer by @llvm.compiler.used; made an ordinary internal global, it lets the variants
    # nobody calls go (a third of the code generation time of a kernel with tanh).
    for g in mod.global_variables:
        if g.name == "llvm.compiler.used":
            g.name, g.linkage = "tcpr.variants", llvm.Linkage.internal
    late = llvm.create_new_module_pass_manager()
    late.add_always_inliner_pass()
    late.add_global_dead_code_eliminate_pass()
    late.run(mod, pb)
    return mod, tm


def optimize_to_object(ir_text: str, vectorize: bool = True) -> bytes:
    """Verify, optimize (O3 with the loop vectorizer, host CPU) and compile IR to an object."""
    mod, tm = _optimize(ir_text, vectorize)
    return bytes(tm.emit_object(mod))


def optimized_ir(ir_text: str, vectorize: bool = True) -> str:
    """The optimized IR (for inspection and tests)."""
    return str(_optimize(ir_text, vectorize)[0])


def _entry_path(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}.o"


def read_entry(key: str) -> bytes | None:
    """The cached object for ``key``, or None if absent or failing its checksum."""
    try:
        data = _entry_path(key).read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(_MAGIC):head]:
        return None
    return payload


def write_entry(key: str, obj: bytes) -> None:
    """Store ``obj`` atomically; a cache that cannot be written is skipped silently."""
    path = _entry_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(obj).digest() + obj)
        os.replace(tmp, path)
    except OSError:
        pass


class _Engine:
    """The process-wide MCJIT engine and the symbols loaded into it."""

    def __init__(self) -> None:
        _init()
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine())
        self.loaded: dict[str, int] = {}

    def add(self, obj: bytes, symbols: list[str]) -> dict[str, int]:
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()
        for s in symbols:
            addr = self.engine.get_function_address(s)
            if not addr:
                raise RuntimeError(f"symbol {s} missing from its object file")
            self.loaded[s] = addr
        return {s: self.loaded[s] for s in symbols}


_engine: _Engine | None = None


def load(key: str, symbols: list[str], build_ir: Callable[[], str],
         use_disk: bool = True, vectorize: bool = True) -> dict[str, int]:
    """Addresses of ``symbols``, compiling ``build_ir()`` only if no cache level has them."""
    global _engine
    with _lock:
        if _engine is None:
            _engine = _Engine()
        if all(s in _engine.loaded for s in symbols):
            STATS.memory_hits += 1
            return {s: _engine.loaded[s] for s in symbols}
        t0 = time.perf_counter()
        obj = read_entry(key) if use_disk else None
        if obj is not None:
            STATS.disk_hits += 1
            try:
                out = _engine.add(obj, symbols)
                STATS.load_seconds.append(time.perf_counter() - t0)
                return out
            except RuntimeError:
                pass  # a valid checksum over a bad object: rebuild below
        obj = optimize_to_object(build_ir(), vectorize)
        if use_disk:
            write_entry(key, obj)
        out = _engine.add(obj, symbols)
        STATS.compiled += 1
        STATS.compile_seconds.append(time.perf_counter() - t0)
        return out
