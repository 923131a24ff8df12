"""Translation validation: an optimized program checked against its original, by running both.

The rules are verified one at a time, but the optimizer applies them in combination, through an
encoding of its own; an answer it changes is caught here, where it happens. ``validate`` runs the
original and the optimized program on the reference interpreter over the user's inputs (when
given), random inputs and inputs drawn from the verifier's edge-value palettes (±inf, NaN, -0.0,
the largest and smallest floats, integer extremes), at two sizes of every symbolic dim, and
compares each result the way the weakest soundness class among the rules that fired allows:

- exact: the same bits on every input (verify.cases.exact_mismatch);
- approx: equal up to rounding on finite inputs (verify.cases.judge's approx check);
- assumes: a precondition is the user's promise about their data, which random inputs need not
  keep: only the user's own inputs are compared (as approx), and with none the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tcp_rules.inputs import random_inputs
from tcp_rules.ir import Func
from tcp_rules.rules.model import CLASSES, Rule
from tcp_rules.verify.cases import Setup, format_scalar, judge
from tcp_rules.verify.values import Palette, draw_array

SIZES = (3, 17)  # every symbolic dim takes each: tiny, and past NumPy's 8-wide summation blocks
TRIALS = 12  # palette draws per size


@dataclass(frozen=True)
class Validation:
    """What translation validation found: ``ok``, or the first difference and its inputs."""

    mode: str  # the class the results were compared as: exact, approx or assumes
    fired: tuple[tuple[str, str], ...]  # (rule, class) of every rule that matched
    cases: int  # input sets compared
    mismatch: str | None = None
    result: int | None = None  # which result differed
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    note: str | None = None  # why fewer inputs were compared than usual
    blamed: tuple[tuple[str, str], ...] = ()  # the fewest fired rules that still differ
    blame_complete: bool = True  # False: the search stopped early, and kept what it had not tried

    @property
    def ok(self) -> bool:
        return self.mismatch is None

    def to_json(self) -> dict[str, object]:
        """The validation in ``tcpr opt --json`` (a refused program is an error instead)."""
        return {"ok": self.ok, "mode": self.mode, "cases": self.cases,
                "fired": [{"rule": n, "class": c} for n, c in self.fired], "note": self.note}

    def failing(self) -> list[np.ndarray]:
        """The inputs on which the programs differ, in parameter order."""
        return list(self.inputs.values())

    def render(self) -> str:
        """A human-readable account, several lines when validation failed."""
        rules = ", ".join(f"{n} ({c})" for n, c in self.fired) or "none"
        if self.ok:
            text = (f"validated ({self.mode}): the optimized program agrees with the original on "
                    f"{self.cases} input set(s); rules that fired: {rules}")
            return text + (f"\n{self.note}" if self.note else "")
        lines = [f"the optimized program differs from the original beyond its class "
                 f"({self.mode}) in result {self.result}: {self.mismatch}",
                 "inputs: " + "; ".join(f"{k} = {_preview(v)}" for k, v in self.inputs.items()),
                 "rules that fired: " + (", ".join(f"{n} ({c})" for n, c in self.fired)
                                         or "none")]
        if self.blamed:
            head = ("rules that together change the answer, each of them needed" if
                    self.blame_complete else "rules that change the answer (the search for the "
                    "fewest stopped early)")
            lines.append(f"{head}: " + ", ".join(f"{n} ({c})" for n, c in self.blamed))
        return "\n".join(lines)


def _preview(a: np.ndarray) -> str:
    flat = [format_scalar(x) for x in a.ravel()[:8]]
    more = ", ..." if a.size > 8 else ""
    return f"{a.dtype}{list(a.shape)} [{', '.join(flat)}{more}]"


def fired_rules(matches: Mapping[str, int], rules: Sequence[Rule]) -> tuple[tuple[str, str], ...]:
    """(name, class) of the rules with matches in a run report (either direction)."""
    by_name = {r.name: r for r in rules}
    out: dict[str, str] = {}
    for key, count in matches.items():
        rule = by_name.get(key.removesuffix("<="))
        if count > 0 and rule is not None:
            out[rule.name] = rule.soundness.kind
    return tuple(sorted(out.items()))


def weakest(classes: Sequence[str]) -> str:
    """The weakest of soundness classes (exact > approx > assumes); exact if none."""
    return max(classes, key=CLASSES.index, default="exact")


def _palette_inputs(func: Func, shapes: Sequence[tuple[int, ...]], rng: np.random.Generator,
                    finite: bool) -> list[np.ndarray]:
    palette = Palette.draw(rng, finite)
    out = []
    for p, shape in zip(func.params, shapes, strict=True):
        out.append(draw_array(shape, p.type.dtype, rng, palette))
    return out


def input_sets(func: Func, mode: str, seed: int = 0,
               sizes: Mapping[str, int] | None = None) -> list[list[np.ndarray]]:
    """Random and palette-drawn inputs for ``func``; symbolic dims take ``sizes``, the others
    each of SIZES in turn."""
    rng = np.random.default_rng(seed)
    out = []
    for size in SIZES:
        base = random_inputs(func, sizes, default_size=size, seed=seed + size)
        out.append(base)
        shapes = [a.shape for a in base]
        for _ in range(TRIALS):
            out.append(_palette_inputs(func, shapes, rng, finite=mode != "exact"))
    return out


def compare(original: Func, optimized: Func, inputs: Sequence[np.ndarray], mode: str
            ) -> tuple[int, str] | None:
    """(result index, description) of the first result that differs beyond ``mode``."""
    judged_as = "exact" if mode == "exact" else "approx"
    named = {p.param: a for p, a in zip(original.params, inputs, strict=True)}
    for i, (a, b) in enumerate(zip(original.results, optimized.results, strict=True)):
        # One func with both results over the original's parameters, as the verifier runs the
        # two sides of a rule (the optimizer's program shares the user's parameters).
        pair = Func("validate", original.params, (a, b), (a.type, b.type))
        judged = judge(Setup(pair, list(original.params), {}, {}), named, judged_as)
        if judged is not None and judged[2] is not None:
            return i, judged[2]
    return None


def validate(original: Func, optimized: Func, fired: Sequence[tuple[str, str]],
             inputs: Sequence[np.ndarray] | None = None, seed: int = 0,
             sizes: Mapping[str, int] | None = None) -> Validation:
    """Run ``original`` and ``optimized`` on the same inputs and compare them as the weakest
    class in ``fired`` allows (see the module docstring)."""
    mode = weakest([c for _, c in fired])
    fired = tuple(fired)
    sets: list[list[np.ndarray]] = [list(inputs)] if inputs is not None else []
    note = None
    if mode == "assumes":
        if not sets:
            note = ("rules of class assumes fired: their preconditions are about your data, so "
                    "only your own inputs can validate them (tcpr run --validate --inputs ...)")
    else:
        sets += input_sets(original, mode, seed, sizes)
    for ins in sets:
        found = compare(original, optimized, ins, mode)
        if found is not None:
            named = {p.param: a for p, a in zip(original.params, ins, strict=True)}
            return Validation(mode, fired, len(sets), found[1], found[0], named, note)
    return Validation(mode, fired, len(sets), note=note)
