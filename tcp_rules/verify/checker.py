"""The soundness verifier: every rule (both directions of a two-way rule) checked against the
reference interpreter, judged by its declared class, with a shrunk counterexample on failure.

Search is seeded and deterministic: the same seed draws the same instances, sizes and values.
A failure found by the search is shrunk with hypothesis (smallest sizes, simplest values).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from hypothesis.extra import numpy as hnp

from tcp_rules.ir import Apply
from tcp_rules.rules.instances import Enumerator, Instance
from tcp_rules.rules.model import Guard, Pattern, POp, Rule
from tcp_rules.rules.semantics import splat_value
from tcp_rules.rules.sorting import body_vars
from tcp_rules.types import ALL_DTYPES, DType
from tcp_rules.verify.cases import (
    REDUCING,
    Case,
    Scalar,
    Setup,
    concretize,
    make_case,
    symbols_of,
)
from tcp_rules.verify.values import (
    Palette,
    draw_array,
    draw_scalar,
    finite_values,
    impose,
    special_values,
    twin,
)

LEVEL = {"exact": 0, "approx": 1, "assumes": 1, "unsound": 2}


@dataclass(frozen=True)
class Profile:
    """How hard to look: cases per direction and class, symbolic instances sampled, sizes.

    Most cases use small sizes; in a share ``large`` of the cases of a rule that reduces, one
    reduced dim is drawn from ``large_sizes``: NumPy sums 8 or more elements with eight
    interleaved accumulators and more than 128 in halves, so a wrong reordering of a sum can
    agree with NumPy on 1 to 7 elements. ``max_elements`` caps the inputs of such a case.
    """

    name: str
    examples: int
    instances: int
    sizes: tuple[int, ...] = (1, 2, 3, 5, 7)
    zero_size: float = 0.04  # chance of a 0 dim, where the ops allow it
    shrink_examples: int = 300
    large: float = 0.4
    large_sizes: tuple[tuple[int, int], ...] = ((8, 40), (129, 300))
    max_elements: int = 1 << 14

    def with_examples(self, n: int) -> Profile:
        return replace(self, examples=n, instances=max(self.instances, n // 4))


PROFILES = {"default": Profile("default", 60, 30),
            "thorough": Profile("thorough", 600, 300, shrink_examples=1000)}


@dataclass
class Verdict:
    """The weakest class a rule satisfies on every case tried, against the one it declares."""

    rule: Rule
    satisfies: str  # exact | approx | unsound
    checked: int
    counterexample: Case | None = None

    @property
    def declared(self) -> str:
        return self.rule.soundness.kind

    @property
    def ok(self) -> bool:
        return self.checked > 0 and LEVEL[self.satisfies] <= LEVEL[self.declared]


# How many instances of each dtype a sample holds per round (the cases cycle through the
# sample in order): f32 and f64 most, since rounding and IEEE specials break the most rules; every
# other dtype each round, so that a rule wrong only for unsigned or 8-bit integers, or for f16,
# is caught on every seed.
DTYPE_WEIGHTS = {DType.F32: 4, DType.F64: 2, DType.I32: 2, DType.U32: 1, DType.F16: 1,
                 DType.I64: 1, DType.BF16: 1, DType.I1: 1, DType.U8: 1, DType.I8: 1,
                 DType.U64: 1, DType.I16: 1, DType.U16: 1}
assert set(DTYPE_WEIGHTS) == ALL_DTYPES, "every dtype needs a verification weight"


def _instances(frm: Pattern, guards: tuple[Guard, ...], rng: np.random.Generator,
               limit: int, bodies: frozenset[str]) -> list[Instance]:
    """A seeded sample of the symbolic instances of a side, every dtype tried: one reservoir
    per dtype (with i1 beside it, for conditions), interleaved by DTYPE_WEIGHTS."""
    total = sum(DTYPE_WEIGHTS.values())
    groups: list[tuple[int, list[Instance]]] = []
    for d, w in DTYPE_WEIGHTS.items():
        n = max(1, -(-limit * w // total))
        pool: list[Instance] = []
        dtypes = [d] if d is DType.I1 else [d, DType.I1]
        seen = 0
        for inst in Enumerator(frm, guards, dtypes, 50_000, bodies=bodies):
            uses = {v.type.dtype for v in inst.env.tensors.values()}
            if d not in uses and (uses or groups):
                continue  # an all-i1 or dtype-free instance: its own group has it
            if len(pool) < n:
                pool.append(inst)
            else:  # reservoir sampling keeps the sample uniform over a long enumeration
                j = int(rng.integers(seen + 1))
                if j < n:
                    pool[j] = inst
            seen += 1
            if seen >= 20 * n:
                break
        groups.append((w, pool))
    sample: list[Instance] = []
    for r in range(max((len(p) for _, p in groups), default=0)):
        for w, pool in groups:
            sample += pool[r * w:(r + 1) * w]
    return sample


class Search:
    """Looks for a case of ``rule`` that violates ``mode`` (exact, or approx under ``pre``)."""

    def __init__(self, rule: Rule, profile: Profile, seed: int):
        self.rule, self.profile = rule, profile
        self.rng = np.random.default_rng([seed, zlib.crc32(rule.name.encode())])
        self.samples = {label: _instances(frm, rule.guards, self.rng, profile.instances,
                                               body_vars(rule))
                        for label, frm, _ in rule.directions()}
        self.checked = 0
        self._reduced: dict[int, list[str]] = {}

    def sizes(self, inst: Instance, frm: Pattern, to: Pattern, large: bool) -> dict[str, int]:
        """Small sizes; with ``large``, one reduced symbol (if any) from a large range."""
        p = self.profile
        sizes = {s: 0 if self.rng.random() < p.zero_size else
                 p.sizes[int(self.rng.integers(len(p.sizes)))] for s in symbols_of(inst)}
        pick = self.reduced_symbols(inst, frm, to)
        if large and pick:
            lo, hi = p.large_sizes[int(self.rng.integers(len(p.large_sizes)))]
            sizes[pick[int(self.rng.integers(len(pick)))]] = int(self.rng.integers(lo, hi + 1))
        return sizes

    def reduced_symbols(self, inst: Instance, frm: Pattern, to: Pattern) -> list[str]:
        """The symbols of ``inst`` that size an axis either side reduces over (summed by a
        reduction or a matmul), found once by building it with a distinct prime per symbol."""
        if not (_reduces(frm) or _reduces(to)):
            return []
        if id(inst) not in self._reduced:
            symbols = symbols_of(inst)
            probe = dict(zip(symbols, (11, 13, 17, 19, 23, 29, 31, 37, 41, 43), strict=False))
            consts: dict[str, Scalar] = {n: 1 for n, v in inst.env.tensors.items()
                                         if splat_value(v) is not None}
            setup = (concretize(frm, to, self.rule.guards, inst, probe, consts)
                     if len(probe) == len(symbols) else None)
            found: list[str] = []
            for v in setup.func.values() if setup else ():
                if isinstance(v, Apply) and v.operands and v.op.name in REDUCING:
                    dims = v.operands[0].type.dims
                    axes = (v.attr_map.get("axes") or () if v.op.name.startswith("reduce")
                            else (len(dims) - 1,))
                    for ax in axes:
                        n = dims[ax].const if 0 <= ax < len(dims) else None
                        found += [s for s, k in probe.items() if k == n and s not in found]
            self._reduced[id(inst)] = found
        return self._reduced[id(inst)]

    def setup(self, inst: Instance, frm: Pattern, to: Pattern, consts: dict[str, Scalar]
              ) -> tuple[dict[str, int], Setup | None]:
        """Sizes and the concrete case; large sizes fall back to small ones past the cap."""
        large = self.rng.random() < self.profile.large
        sizes = self.sizes(inst, frm, to, large)
        setup = concretize(frm, to, self.rule.guards, inst, sizes, consts)
        if large and (setup is None or sum(math.prod(p.type.shape or ()) for p in setup.params)
                      > self.profile.max_elements):
            sizes = self.sizes(inst, frm, to, False)
            setup = concretize(frm, to, self.rule.guards, inst, sizes, consts)
        return sizes, setup

    def run(self, mode: str, pre: tuple[Guard, ...]) -> Case | None:
        finite = mode == "approx"
        for label, frm, to in self.rule.directions():
            sample = self.samples[label]
            for k in range(self.profile.examples if sample else 0):
                inst = sample[k % len(sample)]
                palette = Palette.draw(self.rng, finite)
                consts = {n: draw_scalar(v.type.dtype, self.rng, finite, palette)
                          for n, v in inst.env.tensors.items() if splat_value(v) is not None}
                sizes, setup = self.setup(inst, frm, to, consts)
                if setup is None:
                    continue
                inputs = {p.param: draw_array(p.type.shape or (), p.type.dtype, self.rng,
                                              palette) for p in setup.params}
                twin(inputs, self.rng)
                if pre and not impose(pre, inputs, self.rng):
                    continue
                case = make_case(self.rule, label, mode, inst, setup, sizes, inputs)
                if case is None:
                    continue
                self.checked += 1
                if case.mismatch is not None:
                    return shrink(case, inst, frm, to, self.rule.guards, pre, self.profile)
        return None


def _reduces(p: Pattern) -> bool:
    """Does the pattern sum anything (a reduction or a matmul)?"""
    return isinstance(p, POp) and (p.op.name in REDUCING or any(_reduces(a) for a in p.args))


def verify_rule(rule: Rule, profile: Profile = PROFILES["default"], seed: int = 0) -> Verdict:
    """Check ``rule`` against its declared class; report the weakest class it satisfies."""
    search = Search(rule, profile, seed)
    if rule.soundness.kind == "exact":
        bad = search.run("exact", ())
        if bad is None:
            return Verdict(rule, "exact", search.checked)
        worse = search.run("approx", ())  # the counterexample shown is the strongest failure
        return Verdict(rule, "approx" if worse is None else "unsound", search.checked,
                       bad if worse is None else worse)
    bad = search.run("approx", rule.soundness.precondition)
    return Verdict(rule, "approx" if bad is None else "unsound", search.checked, bad)


def verify_rules(rules: Iterable[Rule], profile: Profile = PROFILES["default"], seed: int = 0,
                 progress: Callable[[Verdict], None] | None = None) -> list[Verdict]:
    out = []
    for r in rules:
        v = verify_rule(r, profile, seed)
        if progress:
            progress(v)
        out.append(v)
    return out


# Shrinking ------------------------------------------------------------------------------------

def _elements(dtype: DType, finite: bool) -> st.SearchStrategy[object]:
    pool = finite_values(dtype) if finite else special_values(dtype)
    if dtype is DType.I1:
        return st.booleans()
    if dtype.is_int:
        info = np.iinfo(dtype.np_dtype)
        return st.sampled_from(pool) | st.integers(int(info.min), int(info.max))
    kw = {"allow_nan": not finite, "allow_infinity": not finite}
    floats = (st.floats(width=64, **kw) if dtype is DType.F64 else  # bf16: f32s, rounded
              st.floats(width=16, **kw) if dtype is DType.F16 else st.floats(width=32, **kw))
    return st.sampled_from(pool) | floats


def shrink(case: Case, inst: Instance, frm: Pattern, to: Pattern, guards: tuple[Guard, ...],
           pre: tuple[Guard, ...], profile: Profile) -> Case:
    """The smallest sizes and simplest values (hypothesis' order) that still fail; else ``case``."""
    finite = case.mode == "approx"
    symbols = list(case.sizes)

    @st.composite
    def candidates(draw: st.DrawFn) -> tuple[dict[str, int], Setup | None, dict[str, np.ndarray]]:
        sizes = {s: draw(st.integers(min(1, case.sizes[s]), max(case.sizes[s], 1)))
                 for s in symbols}
        consts = {n: draw(_elements(inst.env.tensors[n].type.dtype, finite))
                  for n in case.consts}
        setup = concretize(frm, to, guards, inst, sizes, consts)  # type: ignore[arg-type]
        if setup is None:
            return sizes, None, {}
        inputs = {p.param: draw(hnp.arrays(p.type.dtype.np_dtype, p.type.shape or (),
                                           elements=_elements(p.type.dtype, finite)))
                  for p in setup.params}
        return sizes, setup, inputs

    def fails(c: tuple[dict[str, int], Setup | None, dict[str, np.ndarray]]) -> bool:
        sizes, setup, inputs = c
        if setup is None:
            return False
        if pre and not impose(pre, inputs, np.random.default_rng(0)):  # deterministic redraw
            return False
        made = make_case(case.rule, case.direction, case.mode, inst, setup, sizes, inputs)
        return made is not None and made.mismatch is not None

    try:
        sizes, setup, inputs = find(candidates(), fails, settings=settings(
            max_examples=profile.shrink_examples, derandomize=True, database=None,
            deadline=None, suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return case
    assert setup is not None  # fails() already imposed the preconditions on these inputs
    smaller = make_case(case.rule, case.direction, case.mode, inst, setup, sizes, inputs)
    if smaller is None or smaller.mismatch is None or smaller.size > case.size:
        return case
    return smaller
