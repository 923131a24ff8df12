"""From LLVM IR text to callable machine code: optimization, object code, caching, loading.

Each kernel becomes one module: verified, optimized by the new pass builder at speed level 3 with
loop vectorization for the target CPU (name and features), compiled to an object file by the target
machine, and loaded into one process-wide MCJIT engine that lives as long as the process (its
function pointers are handed out to callers, so it must never be collected).

The target (:class:`Target`, :func:`target`) is this machine unless ``$TCPR_TARGET`` names one of
TARGETS (x86-64 levels v1-v4, aarch64) or :func:`targeting` sets one; every strategy the emitters
choose asks it, and irbase checks each target-specific intrinsic against it before emitting.
:func:`compile_for` compiles for any target without running; :func:`load` refuses code this
machine cannot run (another architecture, missing features) with a TargetError.

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
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from tcp_rules import diskcache
from tcp_rules.diagnostics import Diagnostic, TcpError
from tcp_rules.diskcache import cache_dir  # re-exported: jit.cache_dir
from tcp_rules.ops import OPS

_MAGIC = b"TCPK1\n"
# Every module of the code generator is hashed into the cache key: editing one invalidates every
# cache entry (a list of the modules that matter went stale whenever a new one was split off).
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
def _init_all() -> None:
    # Only compiling for another architecture needs its back end.
    _init()
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


class TargetError(TcpError):
    """Code that a target cannot run or select: refused in Python, before LLVM sees it (an LLVM
    selection failure is a fatal error that ends the process)."""

    def __init__(self, message: str):
        super().__init__(Diagnostic(message), "codegen")


@dataclass(frozen=True)
class Target:
    """What code is generated for: an LLVM triple, a CPU name and its feature string. Every
    strategy choice (vector widths, x86 table permutes, vscalefps/vgetexpps, FMA) asks it."""

    name: str
    triple: str
    cpu: str
    features: str  # LLVM's syntax: "+avx2,+fma,-avx512f,..."

    @property
    def arch(self) -> str:
        """The architecture part of the triple: x86_64, aarch64..."""
        return self.triple.split("-", 1)[0]

    @property
    def is_x86(self) -> bool:
        return self.arch in ("x86_64", "i386", "i686")

    def has(self, feature: str) -> bool:
        """Whether the target has ``feature`` (LLVM's name: avx512f, avx2, fma, neon...)."""
        return feature in _enabled(self.features)

    def key(self) -> str:
        """What the cache key and kernel symbols take from the target."""
        return f"{self.triple}|{self.cpu}|{self.features}"

    def machine(self, jit: bool = False) -> llvm.TargetMachine:
        """A fresh LLVM target machine (an engine takes ownership of the one it gets)."""
        if self.arch != host().arch:
            _init_all()
        target = llvm.Target.from_triple(self.triple)
        return target.create_target_machine(cpu=self.cpu, features=self.features, opt=3,
                                            reloc="static" if jit else "default",
                                            codemodel="jitdefault" if jit else "default")

    def runs_here(self) -> str | None:
        """None if this machine can run the target's code, else why not."""
        h = host()
        if self.arch != h.arch:
            return f"target {self.name} ({self.triple}) is not this machine's {h.triple}"
        missing = sorted(_enabled(self.features) - _enabled(h.features))
        if missing:
            return f"this CPU lacks {', '.join(missing)}, which target {self.name} uses"
        return None


@cache
def _enabled(features: str) -> frozenset[str]:
    """The features a feature string turns on (asked per emitted intrinsic: parsed once)."""
    return frozenset(f[1:] for f in features.split(",") if f.startswith("+"))


# x86-64 microarchitecture levels (the psABI's), each adding to the one before, and an aarch64
# server core. LLVM knows the CPU names; the features are spelled out so that strategy choices
# and the code LLVM selects agree.
_V2 = ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")
_V3 = (*_V2, "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_V4 = (*_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_X86 = "x86_64-unknown-linux-gnu"


def _named(name: str, triple: str, cpu: str, feats: tuple[str, ...]) -> Target:
    return Target(name, triple, cpu, _full_width(",".join(f"+{f}" for f in feats)))


def _full_width(features: str) -> str:
    """``features``, with LLVM's preference for 256-bit vectors turned off where AVX-512 is on.

    LLVM's tuning for most AVX-512 CPUs (Skylake-SP to Emerald Rapids, and x86-64-v4) makes the
    loop vectorizer stop at 256 bits, to avoid the clock drop of 512-bit code on early cores. Our
    elementwise kernels are exp, erf and tanh polynomials and per-lane table lookups (one
    vpermps for 16 lanes), which 512-bit vectors speed up far beyond that drop: measured on an
    Emerald Rapids core, GELU-erf 4.85 -> 2.88 ms and softmax 3.70 -> 2.77 ms (the peers suite's
    sizes), streaming kernels unchanged.
    """
    return f"{features},-prefer-256-bit" if "+avx512f" in features.split(",") else features


TARGETS: dict[str, Target] = {
    "x86-64": _named("x86-64", _X86, "x86-64", ("cx8", "fxsr", "mmx", "sse", "sse2")),
    "x86-64-v2": _named("x86-64-v2", _X86, "x86-64-v2", ("sse", "sse2", *_V2)),
    "x86-64-v3": _named("x86-64-v3", _X86, "x86-64-v3", ("sse", "sse2", *_V3)),
    "x86-64-v4": _named("x86-64-v4", _X86, "x86-64-v4", ("sse", "sse2", *_V4)),
    "aarch64": _named("aarch64", "aarch64-unknown-linux-gnu", "neoverse-n1",
                      ("neon", "fp-armv8")),
}


@cache
def host() -> Target:
    """This machine: the process's triple, CPU name and CPU features."""
    _init()
    return Target("host", llvm.get_process_triple(), llvm.get_host_cpu_name(),
                  _full_width(llvm.get_host_cpu_features().flatten()))


_active: ContextVar[Target | None] = ContextVar("tcpr_target", default=None)


def target() -> Target:
    """The target code is generated for: the one set by :func:`targeting`, else the named target
    in ``$TCPR_TARGET`` (``host``, ``x86-64``, ``x86-64-v2``...), else this machine."""
    t = _active.get()
    if t is not None:
        return t
    env = os.environ.get("TCPR_TARGET", "").strip()
    if not env or env == "host":
        return host()
    if env not in TARGETS:
        raise TargetError(f"TCPR_TARGET={env!r} names no target; known: host, "
                          f"{', '.join(TARGETS)}")
    return TARGETS[env]


@contextmanager
def targeting(t: Target | str) -> Iterator[Target]:
    """Generate code for ``t`` (a Target or a name in TARGETS) inside the ``with`` block."""
    if isinstance(t, str):
        if t not in TARGETS and t != "host":
            raise TargetError(f"no target named {t!r}; known: host, {', '.join(TARGETS)}")
        t = host() if t == "host" else TARGETS[t]
    token = _active.set(t)
    try:
        yield t
    finally:
        _active.reset(token)


def has_feature(name: str) -> bool:
    """Whether the target code is generated for has feature ``name`` (avx512f, avx2, fma...)."""
    return target().has(name)


@cache
def fingerprint() -> str:
    """Hash of everything that decides the machine code besides the kernel itself."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    # The op table's flops decide what a kernel stashes (stash.py).
    h.update(repr(sorted((n, op.cost.flops_per_element) for n, op in OPS.items())).encode())
    h.update(llvmlite.__version__.encode())
    return h.hexdigest()


def cache_key(kernel_text: str) -> str:
    """The cache key of a kernel: its canonical text, the codegen sources and the target (the
    current one: strategies differ per target, and so do the symbols derived from the key)."""
    text = f"{fingerprint()}\n{target().key()}\n{kernel_text}"
    return hashlib.sha256(text.encode()).hexdigest()


def _optimize(ir_text: str, vectorize: bool, t: Target, jit: bool = True
              ) -> tuple[llvm.ModuleRef, llvm.TargetMachine]:
    _init()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    tm = t.machine(jit)
    mod.triple = t.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    # Hand-vectorized code (matmul) gains nothing from the loop vectorizer and compiles faster
    # without it.
    pto.loop_vectorization = vectorize
    # Loops are unrolled after O3 (below), not within it: O3 fully unrolls loops of a few
    # known iterations before the loop vectorizer runs, and the rows of 12 or 16 elements
    # that left were vectorized from straight-line code instead, five times slower with
    # AVX-512; and a row kernel it unrolled whole after vectorization (a 4 KiB row's loads
    # all at once) streamed worse. Measured interleaved in one process (Zen 4, one and two
    # threads, AVX-512 and x86-64-v3 code): relu of [N, 12] and [N, 16] 4.5-5.5x faster with
    # AVX-512, layernorm of 4096x1024 1.08-1.39x and RMSNorm 1.26-1.33x, a 2048^2 transpose
    # 1.15-1.67x, the peers suite's other programs and the matmuls within 3% either way,
    # results bit-identical (benchmarks/README.md).
    pto.loop_unrolling = False
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
    # The unrolling O3 was denied: vectorized loops and their remainders (and the matmul's K
    # loop), sized now with the math variants inlined; then the clean-up it needs.
    late.add_loop_unroll_pass()
    late.add_instruction_combine_pass()
    late.add_simplify_cfg_pass()
    late.run(mod, pb)
    return mod, tm


def optimize_to_object(ir_text: str, vectorize: bool = True) -> bytes:
    """Verify, optimize (O3 with the loop vectorizer) and compile IR to an object for the
    current target, to be loaded into this process."""
    mod, tm = _optimize(ir_text, vectorize, target())
    return bytes(tm.emit_object(mod))


def compile_for(ir_text: str, t: Target | str, vectorize: bool = True,
                assembly: bool = False) -> bytes | str:
    """Compile IR to an object file (or assembly text) for target ``t`` (a Target or a name in
    TARGETS) without running it: any architecture LLVM has a back end for. The IR must have been
    generated for ``t`` (under :func:`targeting`), or it may use intrinsics ``t`` lacks."""
    tt = TARGETS[t] if isinstance(t, str) else t
    mod, tm = _optimize(ir_text, vectorize, tt, jit=False)
    return tm.emit_assembly(mod) if assembly else bytes(tm.emit_object(mod))


def optimized_ir(ir_text: str, vectorize: bool = True) -> str:
    """The optimized IR for the current target (for inspection and tests)."""
    return str(_optimize(ir_text, vectorize, target())[0])


def _entry_path(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}.o"


def read_entry(key: str) -> bytes | None:
    """The cached object for ``key``, or None if absent or failing its checksum."""
    return diskcache.read_entry(_entry_path(key), _MAGIC)


def write_entry(key: str, obj: bytes) -> None:
    """Store ``obj`` atomically; a cache that cannot be written is skipped silently."""
    diskcache.write_entry(_entry_path(key), _MAGIC, obj)


class _Engine:
    """The process-wide MCJIT engine and the symbols loaded into it."""

    def __init__(self) -> None:
        _init()
        # Objects come compiled for the current target; the engine only links and loads them.
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), host().machine(True))
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
        if all(s in _engine.loaded for s in symbols):  # checked when loaded (symbols name
            STATS.memory_hits += 1                       # their target: see cache_key)
            return {s: _engine.loaded[s] for s in symbols}
        why = target().runs_here()
        if why is not None:
            raise TargetError(f"cannot run compiled code here: {why} (TCPR_TARGET is "
                              f"{os.environ.get('TCPR_TARGET', 'unset')})")
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
