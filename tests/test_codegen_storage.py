"""f16 conversions (codegen/storage.py): the CPU's instructions (x86 F16C, AArch64), where the
target has them, and the integer operations elsewhere give NumPy's bits for every value but
NaNs, which stay NaNs of their sign (their payload may differ: x86 quiets a signaling one)."""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir
import numpy as np
import pytest
from codegen.support import loop_kernels, loop_module

from tcp_rules.codegen import jit, storage
from tcp_rules.codegen.irbase import I16, I32, IR, like
from tcp_rules.types import DType

STRATEGIES = ["bits", "native"]
F16 = DType.F16


def _widen(e: IR, v: ir.Value) -> ir.Value:
    """f16 bits, carried in the low half of each f32 lane's bits, to f32."""
    b = e.b
    return storage.f16_to_f32(e, b.trunc(b.bitcast(v, like(v.type, I32)), like(v.type, I16)))


def _narrow(e: IR, v: ir.Value) -> ir.Value:
    """f32 to f16 bits, returned in the low half of each f32 lane's bits."""
    b = e.b
    return b.bitcast(b.zext(storage.f32_to_f16(e, v), like(v.type, I32)), v.type)


def _kernels(strategy: str, monkeypatch: pytest.MonkeyPatch
             ) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """Widening and narrowing loops compiled with ``strategy`` for the host (skipped where
    the host has no conversion instructions and ``strategy`` is "native")."""
    if strategy == "native" and storage.f16_strategy() != "native":
        pytest.skip(f"target {jit.target().name} has no f16 conversion instructions")
    with monkeypatch.context() as mp:
        mp.setattr(storage, "f16_strategy", lambda target=None: strategy)
        ks = loop_kernels({f"f16_widen_{strategy}": (16, _widen),
                           f"f16_narrow_{strategy}": (16, _narrow)})
    return ks[f"f16_widen_{strategy}"], ks[f"f16_narrow_{strategy}"]


def _same_or_nan(got: np.ndarray, want: np.ndarray, x_is_nan: np.ndarray, what: str) -> None:
    """Equal bits where the input is not a NaN; a NaN of the input's sign where it is."""
    bad = ~x_is_nan & (got.view(np.uint32 if got.itemsize == 4 else np.uint16)
                       != want.view(np.uint32 if want.itemsize == 4 else np.uint16))
    bad |= x_is_nan & ~(np.isnan(got) & (np.signbit(got) == np.signbit(want)))
    assert not bad.any(), f"{what}: {bad.sum()} differ, first at {np.argwhere(bad)[0]}"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_widening_every_f16(strategy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    widen, _ = _kernels(strategy, monkeypatch)
    h = np.arange(1 << 16, dtype=np.uint32)
    got = widen(h.view(np.float32))
    half = h.astype(np.uint16).view(np.float16)
    _same_or_nan(got, half.astype(np.float32), np.isnan(half), f"{strategy} f16 -> f32")


def _narrowing_inputs() -> np.ndarray:
    """Every finite f16 as f32, the midpoints between neighbours (ties: round to even) and the
    f32 values just beside them, the overflow threshold 65520 and its neighbours, infinities,
    NaNs of both signs and payloads, then 2**20 random f32 bit patterns."""
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    f = np.unique(h[np.isfinite(h)].astype(np.float64))
    mid = (f[:-1] + f[1:]) / 2
    mid32 = mid.astype(np.float32)  # exact: an f16 midpoint needs 12 significant bits
    around = [np.nextafter(mid32, np.float32(np.inf)), np.nextafter(mid32, np.float32(-np.inf))]
    edges = np.array([65504, 65519.996, 65520, 65520.004, 1e9, np.inf, -np.inf], np.float32)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFFA00000],
                    np.uint32).view(np.float32)
    rng = np.random.default_rng(0)
    rand = rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([f.astype(np.float32), mid32, *around, edges, -edges, nans, rand])
    return np.concatenate([x, np.zeros(-len(x) % 16, np.float32)])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_narrowing_rounds_as_numpy(strategy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _, narrow = _kernels(strategy, monkeypatch)
    x = _narrowing_inputs()
    got = narrow(x).view(np.uint32).astype(np.uint16).view(np.float16)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    _same_or_nan(got, want, np.isnan(x), f"{strategy} f32 -> f16")


@pytest.mark.parametrize(("target", "instructions"), [
    ("x86-64", []), ("x86-64-v2", []), ("x86-64-v3", ["vcvtph2ps", "vcvtps2ph"]),
    ("x86-64-v4", ["vcvtph2ps", "vcvtps2ph"]), ("aarch64", ["fcvtl", "fcvtn"])])
def test_targets_with_instructions_use_them(target: str, instructions: list[str]) -> None:
    """A vector of f16 widens and narrows in one instruction each where the target has them
    (the integer operations took some 15 operations each way); elsewhere the integer ones."""
    with jit.targeting(target):  # the strategy is the target's, not the host's
        text = loop_module({"f16_roundtrip": (16, lambda e, v: storage.quantize(e, v, F16))})
    asm = str(jit.compile_for(text, target, vectorize=False, assembly=True))
    found = [i for i in ("vcvtph2ps", "vcvtps2ph", "fcvtl", "fcvtn") if i in asm]
    assert found == instructions, (target, found)
    assert storage.f16_strategy(jit.TARGETS[target]) == ("native" if instructions else "bits")
