"""Proof obligations: the concrete instances of a rule direction (typed, sized, attributes
chosen), each turned into z3 terms for both sides over symbolic element values.

Which instances: a rule built only of elementwise ops (and constants) means the same scalar
formula at every element, so its scalar instance (rank 0) in every dtype stands for every shape:
such a proof holds for all shapes. Any other rule is proved per instance, for every instance the
verifier's enumerator gives (rank <= 3) with every symbolic dim 1 or 2, in the dtypes BOUND_DTYPES;
the verdict states that bound.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import z3

from tcp_rules.interpret import _concrete_attrs
from tcp_rules.ir import Apply, Param, topo_order
from tcp_rules.ops import ShapeError
from tcp_rules.prove.domain import Ctx, Unsupported, var
from tcp_rules.prove.formulas import FORMULAS, UNSUPPORTED
from tcp_rules.rules.instances import CONST_VALUES, Enumerator, Instance
from tcp_rules.rules.model import Pattern, POp, Rule
from tcp_rules.rules.semantics import splat_value
from tcp_rules.rules.sorting import body_vars
from tcp_rules.types import ALL_DTYPES, DType, TensorType
from tcp_rules.verify.cases import Scalar, Setup, concretize, symbols_of

SIZES = (1, 2)
MAX_SYMBOLS = 6  # 2**6 size assignments per instance at most; beyond, only all-1 and all-2
BOUND_DTYPES = (DType.F32, DType.I32, DType.I1)
PER_DTYPE = 60  # instances per dtype at most (the verdict says so when the cap is reached)
GENERAL_PER_DTYPE = 150  # the same for proofs for every size, one query per instance
# Every dtype for a scalar (all-shapes) proof, f32 first: a counterexample is shown in the
# first dtype that has one.
SCALAR_DTYPES = (DType.F32, DType.F64, DType.F16, DType.BF16, DType.I32, DType.I64, DType.U32,
                 DType.U64, DType.I16, DType.U16, DType.I8, DType.U8, DType.I1)
assert set(SCALAR_DTYPES) == ALL_DTYPES, "every dtype needs a place in SCALAR_DTYPES"


@dataclass
class Obligation:
    """One concrete instance of a direction: what to prove equal, and how to rebuild the case."""

    direction: str
    frm: Pattern
    to: Pattern
    inst: Instance
    sizes: dict[str, int]
    setup: Setup


# One instance of a direction of a rule: (direction, from, to, instance), proved for every size
# where it can be (allsizes.py), else through its obligations at bounded sizes.
General = tuple[str, Pattern, Pattern, Instance]


@dataclass
class Plan:
    """The obligations of a rule and the bound they cover (None: all shapes); a rule that is
    not elementwise also lists its instances, and the bound each reading may state."""

    obligations: list[Obligation]
    bound: str | None
    capped: bool = False
    instances: list[General] = field(default_factory=list)
    sizes: str = ""  # the bounded sizes: "dims in {1, 2}"
    rest: list[str] = field(default_factory=list)  # what else the bound says
    general_capped: bool = False

    def scope(self, general: bool) -> str | None:
        """The bound of a proof for every size (``general``), or at the bounded sizes."""
        cap = self.general_capped if general else self.capped
        rest = ([f"the first {GENERAL_PER_DTYPE if general else PER_DTYPE} instances per "
                 "dtype"] if cap else []) + self.rest
        if not self.sizes:  # elementwise: the scalar instances stand for every shape
            return "; ".join(rest) or None
        sizes = "every size" if general else self.sizes
        head = "rank <= 3, " + sizes + ", dtypes " + ", ".join(str(d) for d in BOUND_DTYPES)
        return "; ".join([head, *rest])


def elementwise_only(p: Pattern) -> bool:
    """Only elementwise ops and constants: the same scalar formula at every element."""
    if not isinstance(p, POp):
        return True
    ok = p.op.traits.elementwise or p.op.category == "constant"
    return ok and all(elementwise_only(a) for a in p.args)


def _scalar(inst: Instance) -> bool:
    return all(v.type.rank == 0 for v in inst.env.tensors.values())


def _instances(rule: Rule, frm: Pattern, dtypes: tuple[DType, ...], scalar: bool,
               general: bool = False) -> tuple[list[Instance], bool]:
    """Instances per dtype (with i1 beside it for conditions), as the verifier groups them;
    ``general``: every instance whose guards hold at some size, for a proof for every size."""
    from tcp_rules.prove.allsizes import guards_may_hold

    out: list[Instance] = []
    capped = False
    bodies = body_vars(rule)
    cap = GENERAL_PER_DTYPE if general else PER_DTYPE
    exact = (lambda env: guards_may_hold(rule.guards, env)) if general else None
    for i, d in enumerate(dtypes):
        kinds = [d] if d is DType.I1 else [d, DType.I1]
        taken = 0
        for inst in Enumerator(frm, rule.guards, kinds, 50_000, bodies=bodies, may_hold=exact):
            uses = {v.type.dtype for v in inst.env.tensors.values()}
            if d not in uses and (uses or i > 0):
                continue  # an all-i1 or dtype-free instance: its own group has it
            if scalar and not _scalar(inst):
                continue
            if taken >= cap:
                capped = True
                break
            out.append(inst)
            taken += 1
    return out, capped


# Where no instance fits in dims 1 and 2 (a slice of 4 elements), every dim is tried at one
# larger size in turn, and the bound says which.
LARGER = (3, 4, 5, 6, 8)


def _size_choices(symbols: list[str], sizes: tuple[int, ...] = SIZES
                  ) -> Iterator[dict[str, int]]:
    if len(symbols) > MAX_SYMBOLS or len(sizes) == 1:
        for n in sizes:
            yield dict.fromkeys(symbols, n)
        return
    for combo in itertools.product(sizes, repeat=len(symbols)):
        yield dict(zip(symbols, combo, strict=True))


def plan(rule: Rule) -> Plan:
    """Every obligation of ``rule``, both directions of a two-way rule."""
    scalar = elementwise_only(rule.lhs) and elementwise_only(rule.rhs)
    obligations: list[Obligation] = []
    general: list[General] = []
    capped = general_capped = False
    larger = 0
    for label, frm, to in rule.directions():
        found: list[Obligation] = []
        if scalar:
            insts, _ = _instances(rule, frm, SCALAR_DTYPES, True)
            found = _concrete(label, frm, to, rule, insts)
        if not found:
            scalar = False
            insts, cut = _instances(rule, frm, BOUND_DTYPES, False)
            capped |= cut
            if rule.soundness.kind != "assumes":  # see prover._general
                every, cut = _instances(rule, frm, BOUND_DTYPES, False, general=True)
                general_capped |= cut
                general += [(label, frm, to, inst) for inst in every]
            found = _concrete(label, frm, to, rule, insts)
            for n in LARGER if not found else ():
                found = _concrete(label, frm, to, rule, insts, (n,))
                if found:
                    larger = n
                    break
        obligations += found
    consts = any(splat_value(v) is not None
                 for o in obligations for v in o.inst.env.tensors.values())
    rest = []
    if consts:
        rest.append("constants " + ", ".join(map(str, CONST_VALUES)))
    if rule.attr_vars and any(s.name != "DTYPE" for _, s in rule.attr_vars):
        rest.append("attributes from each op's attribute space")
    sizes = "" if scalar else (
        f"every dim {larger}" if larger else f"dims in {{{', '.join(map(str, SIZES))}}}")
    p = Plan(obligations, None, capped, general, sizes, rest, general_capped)
    p.bound = p.scope(False)
    return p


def _consts(inst: Instance) -> dict[str, Scalar]:
    return {n: c for n, v in inst.env.tensors.items() if (c := splat_value(v)) is not None}


def at_sizes(label: str, frm: Pattern, to: Pattern, rule: Rule, inst: Instance,
             sizes: dict[str, int]) -> Obligation | None:
    """The obligation of ``inst`` at the given sizes (None where it does not build there)."""
    chosen = {s: sizes.get(s, 1) for s in symbols_of(inst)}
    setup = concretize(frm, to, rule.guards, inst, chosen, _consts(inst))
    return None if setup is None else Obligation(label, frm, to, inst, chosen, setup)


def _concrete(label: str, frm: Pattern, to: Pattern, rule: Rule, insts: list[Instance],
              sizes: tuple[int, ...] = SIZES) -> list[Obligation]:
    out: list[Obligation] = []
    seen: set[str] = set()
    for inst in insts:
        consts = _consts(inst)
        for chosen in _size_choices(symbols_of(inst), sizes):
            setup = concretize(frm, to, rule.guards, inst, chosen, consts)
            if setup is None:
                continue
            key = repr(([(p.param, str(p.type)) for p in setup.params], sorted(
                (k, repr(v)) for k, v in setup.attrs.items()), sorted(consts.items())))
            if key in seen:
                continue
            seen.add(key)
            out.append(Obligation(label, frm, to, inst, chosen, setup))
    return out


def inputs_of(setup: Setup, mode: str) -> dict[str, np.ndarray]:
    """One z3 constant per element of each parameter, named x[i,j]."""
    out: dict[str, np.ndarray] = {}
    for p in setup.params:
        shape = p.type.shape or ()
        arr = np.empty(shape, dtype=object)
        for i in np.ndindex(*shape):
            arr[i] = var(f"{p.param}[{','.join(map(str, i))}]", p.type.dtype, mode)
        out[p.param] = arr
    return out


def symbolic(setup: Setup, inputs: dict[str, np.ndarray], ctx: Ctx
             ) -> tuple[np.ndarray, np.ndarray, list[z3.BoolRef], list[z3.BoolRef]]:
    """Both sides as arrays of z3 terms, and where each is defined (over the reals: nonzero
    divisors, sqrt of x >= 0); Unsupported where an op has no formula here."""
    vals: dict[int, np.ndarray] = {}
    own: dict[int, list[z3.BoolRef]] = {}
    for v in setup.func.values():
        if isinstance(v, Param):
            vals[id(v)] = inputs[v.param]
            continue
        assert isinstance(v, Apply)
        name = v.op.name
        if name not in FORMULAS:
            raise Unsupported(f"{name}: {UNSUPPORTED.get(name, 'no formula')}")
        args = [vals[id(o)] for o in v.operands]
        attrs = _concrete_attrs(v, {})
        types = [TensorType.of(o.type.dtype, a.shape) for a, o in
                 zip(args, v.operands, strict=True)]
        try:
            out = v.op.infer(types, attrs)
        except ShapeError as e:
            raise Unsupported(f"{name}: {e.message}") from None
        before = len(ctx.domain)
        vals[id(v)] = FORMULAS[name](ctx, name, args, types, out, attrs)
        own[id(v)] = ctx.domain[before:]
    lhs, rhs = (vals[id(r)] for r in setup.func.results)
    dl, dr = ([c for u in topo_order([r]) for c in own.get(id(u), [])]
              for r in setup.func.results)
    return lhs, rhs, dl, dr


def equal(a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
    """Exact equality: z3's = on floats is identity of IEEE values (NaN = NaN, -0.0 != 0.0)."""
    return a == b
