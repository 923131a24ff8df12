"""Values that break rules: dtype-aware pools of IEEE and integer edge cases, random arrays that
favour them, and preconditions (assumes(...)) imposed on the drawn inputs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tcp_rules.rules.functions import PRECONDITIONS
from tcp_rules.rules.model import AConst, AFn, Guard, TRef
from tcp_rules.types import DType, finfo, is_float_array


def special_values(dtype: DType) -> list[float | int | bool]:
    """Edge cases first, simplest first (a shrinker prefers earlier ones)."""
    if dtype is DType.I1:
        return [False, True]
    if dtype.is_unsigned:  # no negatives; the sign bit of the same-width signed type instead
        hi = int(np.iinfo(dtype.np_dtype).max)
        return [0, 1, 2, 7, hi, hi - 1, hi // 2 + 1, hi // 2, 1 << (dtype.bits // 2), 13]
    if dtype.is_int:
        info = np.iinfo(dtype.np_dtype)
        lo, hi = int(info.min), int(info.max)
        return [0, 1, -1, 2, -2, 7, -13, hi, lo, hi - 1, lo + 1, 1 << (info.bits // 2)]
    fi = finfo(dtype)
    big, tiny = float(fi.max), float(fi.tiny)
    exp_edge = math.log(big)  # 88.72 for f32 and bf16, 709.78 for f64, 11.09 for f16
    return [0.0, 1.0, -1.0, 2.0, 0.5, -0.0, -2.0, 3.0, 0.1,
            float("inf"), float("-inf"), float("nan"),
            big, -big, tiny, -tiny, float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
            tiny * 0.75,  # a denormal
            exp_edge - 0.5, exp_edge + 0.5, -exp_edge - 20.0,  # exp near overflow / underflow
            math.sqrt(big) * 1.5, math.sqrt(tiny) * 0.5,  # squares overflow / underflow
            1e6, -1e6, 1.0 + float(fi.eps), 1.0 - float(fi.epsneg)]


def finite_values(dtype: DType) -> list[float | int | bool]:
    """Values for approx checks: "equal up to rounding" is about the normal range, so floats
    stay finite and away from overflow and underflow (the exact check covers the extremes)."""
    if not dtype.is_float:
        return special_values(dtype)
    fi = finfo(dtype)
    # f16's largest value is 65504: moderate there means small enough that a product of three
    # summed over a few hundred terms stays finite, as 1e3 is for the other floats
    big = 4.0 if dtype is DType.F16 else 1e3
    return [0.0, 1.0, -1.0, 2.0, 0.5, -0.0, -2.0, 3.0, 0.1, big, -big, 1.0 / big,
            1.0 + float(fi.eps), 1.0 - float(fi.epsneg)]


def full_mantissa(dtype: DType, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` values with every significant bit random: floats of either sign and any magnitude
    from 1e-7 to 1e4 (f16: 1e-2 to 3; small ones test relative error near zero), integers
    anywhere in the dtype's range. Simple values (0, 1, 0.5, powers of two) hide rounding:
    x * 3 / 3 is x for all of them, and so is an i32's trip through f32."""
    if dtype is DType.I1:
        return rng.random(n) < 0.5
    if dtype.is_int:
        info = np.iinfo(dtype.np_dtype)
        return rng.integers(int(info.min), int(info.max), size=n, endpoint=True,
                            dtype=dtype.np_dtype)
    mantissa = rng.uniform(1.0, 2.0, size=n) * rng.choice([-1.0, 1.0], size=n)
    # f16 is denormal below 6e-5 and overflows above 65504 (see finite_values)
    low, high = (-2, 0.5) if dtype is DType.F16 else (-7, 4)
    return (mantissa * 10.0 ** rng.uniform(low, high, size=n)).astype(dtype.np_dtype)


def draw_scalar(dtype: DType, rng: np.random.Generator, finite: bool,
                palette: Palette | None = None) -> float | int | bool:
    """One value: from ``palette`` (if given) a third of the time, so that a splat constant
    meets the same values as the arrays (max(x, 0.0) with x = -0.0); else an edge case half of
    the time, else an ordinary random one."""
    if palette is not None and rng.random() < 1 / 3:
        pool_values = palette.values[dtype]
        return pool_values[int(rng.integers(len(pool_values)))].item()
    pool = finite_values(dtype) if finite else special_values(dtype)
    if rng.random() < 0.5:
        return pool[int(rng.integers(len(pool)))]
    return _ordinary(dtype, rng, ())  # type: ignore[return-value]


def _ordinary(dtype: DType, rng: np.random.Generator, shape: tuple[int, ...]) -> object:
    if dtype is DType.I1:
        return rng.random(shape) < 0.5 if shape else bool(rng.random() < 0.5)
    if dtype.is_int:
        small = rng.integers(0 if dtype.is_unsigned else -20, 21, size=shape or None)
        return small.astype(dtype.np_dtype) if shape else int(small)
    lo, hi = (-2, 0.5) if dtype is DType.F16 else (-3, 3)  # f16: see finite_values
    scale = 10.0 ** rng.uniform(lo, hi, size=shape or None)
    vals = rng.standard_normal(size=shape or None) * scale
    return vals.astype(dtype.np_dtype) if shape else float(vals)


@dataclass(frozen=True)
class Palette:
    """The few edge values one case draws its elements from, and how often.

    Drawing every array of a case from one small palette makes coincidences common: the same
    value in two operands (x - y with x == y), 0.0 against -0.0, inf against inf. Every palette
    also holds a value with a full mantissa (see full_mantissa), so that coincidences and
    repeats are not only of simple values. ``values`` is drawn per dtype when first asked for
    (a case uses one or two of them), from a seed of its own: the same whatever the order.
    """

    values: Mapping[DType, np.ndarray]
    p_special: float

    @staticmethod
    def draw(rng: np.random.Generator, finite: bool) -> Palette:
        return Palette(_PaletteValues(int(rng.integers(1 << 62)), finite),
                       float(rng.uniform(0.5, 1.0)))


class _PaletteValues(dict[DType, np.ndarray]):
    def __init__(self, seed: int, finite: bool):
        super().__init__()
        self.seed, self.finite = seed, finite

    def __missing__(self, dtype: DType) -> np.ndarray:
        rng = np.random.default_rng([self.seed, list(DType).index(dtype)])
        self[dtype] = values = _palette_values(dtype, rng, self.finite)
        return values


def _palette_values(dtype: DType, rng: np.random.Generator, finite: bool) -> np.ndarray:
    pool = finite_values(dtype) if finite else special_values(dtype)
    weights = 1.0 / (np.arange(len(pool)) + 3.0)  # the simplest values most often
    if dtype is not DType.I1 and rng.random() < 0.5:  # a mirror: {0.0, -0.0}, {1, -1}
        near = np.array([3.0, 1.0, 1.0, 1.0]) / 6.0  # half of them signed zeros
        picks = [pool[int(rng.choice(len(near), p=near))]]
        picks.append(-picks[0])
    else:
        size = min(int(rng.choice([1, 2, 3], p=[0.3, 0.4, 0.3])), len(pool))
        picks = [pool[i] for i in rng.choice(len(pool), size=size, replace=False,
                                             p=weights / weights.sum())]
        if dtype is not DType.I1 and rng.random() < 0.5:  # x with -x
            picks += [-v for v in picks]
    with np.errstate(all="ignore"):  # -MIN wraps to MIN, as the ops do
        full = full_mantissa(dtype, rng, 1)
        if dtype is not DType.I1 and rng.random() < 0.5:
            full = np.concatenate([full, -full])
        # The picks three times over: the added values should not dilute the picks'
        # coincidences (max(0.0, -0.0) is caught by a {0.0, -0.0} palette, not by others).
        return np.concatenate([np.tile(_stored(picks, dtype), 3), full,
                               _extreme(dtype, rng, finite)])


def _extreme(dtype: DType, rng: np.random.Generator, finite: bool) -> np.ndarray:
    """In a third of the exact palettes, one of the values that most rules get wrong if they
    get anything wrong (NaN, inf, -inf; the integer extremes): a rule wrong only there is
    still caught on every seed, not only where the weighted picks happen to include them."""
    if finite or dtype is DType.I1 or rng.random() >= 1 / 3:
        return np.zeros(0, dtype.np_dtype)
    if dtype.is_int:
        info = np.iinfo(dtype.np_dtype)
        pool: list[float | int] = [int(info.min), int(info.max)]
    else:
        pool = [float("nan"), float("inf"), float("-inf")]
    return np.array([pool[int(rng.integers(len(pool)))]], dtype=dtype.np_dtype)


def _stored(values: Sequence[float | int | bool], dtype: DType) -> np.ndarray:
    """Python scalars as ``dtype``; integers wrap (the negation of MIN, or of an unsigned
    value, is what the ops compute)."""
    if dtype.is_int:
        half = 1 << (dtype.bits - 1)
        off = 0 if dtype.is_unsigned else half
        return np.array([(int(v) + off) % (2 * half) - off for v in values], dtype=dtype.np_dtype)
    with np.errstate(over="ignore"):  # 1e6 is inf as an f16, as the program would have it
        return np.array(values, dtype=np.float64 if dtype.is_float else bool).astype(
            dtype.np_dtype)


def draw_array(shape: Sequence[int], dtype: DType, rng: np.random.Generator,
               palette: Palette) -> np.ndarray:
    """A random array whose elements come from ``palette`` with its probability."""
    shape = tuple(shape)
    arr = np.asarray(_ordinary(dtype, rng, shape), dtype=dtype.np_dtype).reshape(shape)
    pool = palette.values[dtype]
    mask = rng.random(shape) < palette.p_special
    if mask.any():
        arr[mask] = pool[rng.integers(len(pool), size=int(mask.sum()))]
    return arr


def twin(arrays: dict[str, np.ndarray], rng: np.random.Generator, p: float = 0.25) -> None:
    """With probability ``p``, make one input the copy or the negation of another of its type:
    x - y with y == x, max(x, y) with y == -x meet 0.0 against -0.0 in every element."""
    names = list(arrays)
    pairs = [(a, b) for a in names for b in names if a != b
             and arrays[a].shape == arrays[b].shape and arrays[a].dtype == arrays[b].dtype
             and arrays[a].dtype != np.bool_]
    if not pairs or rng.random() >= p:
        return
    a, b = pairs[int(rng.integers(len(pairs)))]
    with np.errstate(all="ignore"):  # -MIN wraps to MIN, as the ops do
        # np.array: the negation of a 0-d array is a NumPy scalar, which impose cannot assign to
        arrays[b] = np.array(-arrays[a] if rng.random() < 0.5 else arrays[a])


def precondition_mask(g: Guard, arrays: dict[str, np.ndarray]) -> tuple[str, np.ndarray]:
    """(variable, elementwise truth) of one precondition over drawn arrays."""
    if isinstance(g.lhs, AFn):
        arg = g.lhs.args[0]
        assert isinstance(arg, TRef)
        with np.errstate(all="ignore"):
            return arg.name, np.asarray(PRECONDITIONS[g.lhs.fn].impl(arrays[arg.name]))
    assert isinstance(g.lhs, TRef) and isinstance(g.rhs, AConst) and g.op is not None
    a = arrays[g.lhs.name]
    with np.errstate(all="ignore"):
        ops = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
               ">": np.greater, ">=": np.greater_equal}
        # Compared as numbers, not in the array's dtype: 1e-18 as an f16 is 0, and -1 as a u8
        # is 255. float64 holds every value of the narrower floats; Python ints any integer.
        wide = a.astype(np.float64) if is_float_array(a) else a.astype(object)
        return g.lhs.name, np.asarray(ops[g.op](wide, g.rhs.value), dtype=bool)


def impose(pre: Sequence[Guard], arrays: dict[str, np.ndarray],
           rng: np.random.Generator) -> bool:
    """Redraw elements that break the preconditions; False if some cannot be satisfied."""
    for g in pre:
        name, ok = precondition_mask(g, arrays)
        if ok.all():
            continue
        a = arrays[name]
        dtype = DType.from_numpy(a.dtype)
        assert dtype is not None
        candidates = np.concatenate([
            _stored(special_values(dtype), dtype),
            np.asarray(_ordinary(dtype, rng, (64,)), dtype=a.dtype),
            full_mantissa(dtype, rng, 64)])
        _, good = precondition_mask(g, {name: candidates})
        if not good.any():
            return False
        pool = candidates[good]
        bad = ~ok
        a[bad] = pool[rng.integers(len(pool), size=int(bad.sum()))]
    return all(precondition_mask(g, arrays)[1].all() for g in pre)
