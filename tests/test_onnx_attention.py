"""ONNX's Attention op (opsets 23-25) imported as TCP ops, against onnxruntime: 3-D and 4-D
inputs, grouped-query heads, boolean and additive masks of every rank (shorter than the keys
too), causal masks with and without a cache, sliding windows, padded keys, the soft cap, the
scale and every qk_matmul_output_mode; symbolic batch and sequence; the bf16 cases of ONNX's
node tests against float64; and the errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerics import assert_within, error_bounds
from onnx_support import run_onnx, with_output_shapes

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tcp_rules.diagnostics import TcpError  # noqa: E402
from tcp_rules.frontends.onnx import import_model  # noqa: E402
from tcp_rules.pipeline import run_func  # noqa: E402

_OUTS = ("Y", "present_key", "present_value", "qk_matmul_output")


def _model(shapes: dict[str, tuple[Any, ...]], attrs: dict[str, Any], outputs: list[str],
           opset: int = 23, mask_type: int = TensorProto.FLOAT,
           nonpad: bool = False) -> onnx.ModelProto:
    names = ["Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"]
    inputs = [n if n in shapes or (n == "nonpad_kv_seqlen" and nonpad) else "" for n in names]
    while inputs[-1] == "":
        inputs.pop()
    types = {"attn_mask": mask_type, "nonpad_kv_seqlen": TensorProto.INT64}
    vis = [helper.make_tensor_value_info(n, types.get(n, TensorProto.FLOAT), shapes[n])
           for n in inputs if n]
    outs = [o if o in outputs else "" for o in _OUTS]
    while outs[-1] == "":
        outs.pop()
    node = helper.make_node("Attention", inputs, outs, name="attn", **attrs)
    graph = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info(
        o, TensorProto.FLOAT, None) for o in outs if o])
    return with_output_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))


def _assert_matches_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                                got: list[np.ndarray], what: str) -> None:
    """Each result as close to onnxruntime's as ONNX's reference evaluator is (4 times its
    distance, plus 4 ulps of the largest result where those two agree exactly), as the other
    frontend tests hold three independent f32 implementations; NaN where onnxruntime has NaN."""
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    other = ReferenceEvaluator(model).run(None, feeds)
    assert len(got) == len(want), what
    for i, (g, w, o) in enumerate(zip(got, want, other, strict=True)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what}: result {i}"
        # Where a mask left -inf in the scores (mode 2), onnxruntime writes -FLT_MAX: there,
        # and at NaN, ours must be what the spec says, as ONNX's reference evaluator has it.
        special = ~np.isfinite(w) | (np.abs(w) == np.finfo(np.float32).max)
        assert np.array_equal(g[special], o[special], equal_nan=True), \
            f"{what}: result {i} differs at infinities or NaN"
        g, w, o = (a[~special].astype(np.float64) for a in (g, w, o))
        assert np.isfinite(o).all(), f"{what}: result {i}: the two peers disagree on specials"
        if not w.size:
            continue
        theirs = float(np.max(np.abs(o - w)))
        slack = 4 * float(np.spacing(np.max(np.abs(w)).astype(np.float32)))
        ours = float(np.max(np.abs(g - w)))
        assert ours <= 4 * theirs + slack, f"{what}: result {i} {ours:.3g} from onnxruntime " \
            f"({theirs:.3g})"


@st.composite
def _configs(draw: st.DrawFn) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A random Attention node and its inputs: rank, heads (grouped or not), sequence lengths,
    head sizes, a cache, a mask (its type, rank and length), causal, cap, scale, output mode."""
    rank = draw(st.sampled_from([3, 4]))
    batch, kv_heads, group = draw(st.integers(1, 2)), draw(st.integers(1, 3)), \
        draw(st.sampled_from([1, 2]))
    q_heads = kv_heads * group
    q_len, kv_len, past = draw(st.integers(1, 5)), draw(st.integers(1, 6)), \
        draw(st.sampled_from([0, 0, 3]))
    head, v_head = draw(st.sampled_from([4, 8])), draw(st.sampled_from([4, 6]))
    total = past + kv_len
    attrs: dict[str, Any] = {}
    if rank == 3:
        shapes: dict[str, tuple[int, ...]] = {
            "Q": (batch, q_len, q_heads * head), "K": (batch, kv_len, kv_heads * head),
            "V": (batch, kv_len, kv_heads * v_head)}
        attrs |= {"q_num_heads": q_heads, "kv_num_heads": kv_heads}
    else:
        shapes = {"Q": (batch, q_heads, q_len, head), "K": (batch, kv_heads, kv_len, head),
                  "V": (batch, kv_heads, kv_len, v_head)}
    mask = draw(st.sampled_from(["none", "float", "bool"]))
    mask_type = TensorProto.BOOL if mask == "bool" else TensorProto.FLOAT
    if mask != "none":
        mask_rank = draw(st.integers(2, 4))
        short = 0  # onnxruntime refuses a mask shorter than the keys (tested below)
        lead = [(batch, 1), (batch, q_heads)][draw(st.integers(0, 1))] if mask_rank == 4 else \
            (q_heads,) if mask_rank == 3 else ()
        shapes["attn_mask"] = (*lead, q_len, total - short)[-mask_rank:] if mask_rank > 2 \
            else (q_len, total - short)
    if past:
        shapes["past_key"] = (batch, kv_heads, past, head)
        shapes["past_value"] = (batch, kv_heads, past, v_head)
    if draw(st.booleans()):
        attrs["is_causal"] = 1
    if draw(st.booleans()):
        attrs["softcap"] = draw(st.sampled_from([1.5, 20.0]))
    if draw(st.booleans()):
        attrs["scale"] = draw(st.sampled_from([0.05, 1.0]))
    mode = draw(st.sampled_from([None, 0, 1, 2, 3]))
    outputs = ["Y", *(["present_key", "present_value"] if past else [])]
    if mode is not None:
        outputs.append("qk_matmul_output")
        if mode:
            attrs["qk_matmul_output_mode"] = mode
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    if mask == "bool":
        feeds["attn_mask"] = rng.random(shapes["attn_mask"]) < 0.7
    elif mask == "float":
        m = feeds["attn_mask"]
        feeds["attn_mask"] = np.where(rng.random(m.shape) < 0.2, -np.inf, m).astype(np.float32)
    return _model(shapes, attrs, outputs, mask_type=mask_type), feeds


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_configs())
def test_attention_matches_onnxruntime(config: tuple[onnx.ModelProto, dict[str, np.ndarray]]
                                       ) -> None:
    model, feeds = config
    what = str({a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute})
    with np.errstate(all="ignore"):
        got = run_onnx(model, feeds, "reference")
    _assert_matches_onnxruntime(model, feeds, got, f"reference {what}")


@pytest.mark.parametrize("engine", ["compiled", "optimized"])
@pytest.mark.parametrize("case", [
    ({"is_causal": 1, "q_num_heads": 4, "kv_num_heads": 2}, "bool", 0),
    ({"softcap": 3.0, "scale": 0.2, "qk_matmul_output_mode": 3}, "float", 3),
    ({"is_causal": 1, "qk_matmul_output_mode": 2}, "float", 0),
])
def test_attention_compiled_matches_onnxruntime(case: tuple[dict[str, Any], str, int],
                                                engine: str) -> None:
    """The compiled engines on a few configurations, with a cache, masks that block whole rows
    of keys (a row with no key to attend gives zeros) and 3-D grouped heads."""
    attrs, mask, past = case
    rng = np.random.default_rng(5)
    b, h, q, kv, d = 2, 4, 5, 7, 8
    three = "q_num_heads" in attrs
    kvh = attrs.get("kv_num_heads", h)
    shapes: dict[str, tuple[int, ...]] = (
        {"Q": (b, q, h * d), "K": (b, kv, kvh * d), "V": (b, kv, kvh * d)} if three else
        {"Q": (b, h, q, d), "K": (b, h, kv, d), "V": (b, h, kv, d)})
    shapes["attn_mask"] = (b, 1, q, past + kv)
    if past:
        shapes |= {"past_key": (b, kvh, past, d), "past_value": (b, kvh, past, d)}
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    keep = rng.random(shapes["attn_mask"]) < 0.6
    keep[0, 0, 1] = False  # a query row with every key masked
    feeds["attn_mask"] = keep if mask == "bool" else np.where(keep, 0.5, -np.inf).astype(
        np.float32)
    outs = ["Y", *(["present_key", "present_value"] if past else []),
            *(["qk_matmul_output"] if "qk_matmul_output_mode" in attrs else [])]
    model = _model(shapes, attrs, outs, mask_type=TensorProto.BOOL if mask == "bool" else
                   TensorProto.FLOAT)
    got = run_onnx(model, feeds, engine)
    _assert_matches_onnxruntime(model, feeds, got, f"{engine} {attrs}")
    if not attrs.get("is_causal"):
        assert (got[0][0, :, 1] == 0).all()  # the fully masked row


def test_attention_with_symbolic_batch_and_sequence() -> None:
    """Imported once with batch and sequence symbolic (a causal mask over them), run at two
    sizes on the compiled engine."""
    shapes = {"Q": ("batch", 4, "seq", 8), "K": ("batch", 2, "seq", 8),
              "V": ("batch", 2, "seq", 8)}
    model = _model(shapes, {"is_causal": 1}, ["Y"])  # type: ignore[arg-type]
    imported = import_model(model)
    func = imported.module.funcs[0]
    assert {str(d) for d in func.params[0].type.dims} >= {"batch", "seq"}
    for batch, seq in ((1, 3), (3, 9)):
        rng = np.random.default_rng(seq)
        feeds = {"Q": rng.standard_normal((batch, 4, seq, 8)).astype(np.float32),
                 "K": rng.standard_normal((batch, 2, seq, 8)).astype(np.float32),
                 "V": rng.standard_normal((batch, 2, seq, 8)).astype(np.float32)}
        got = list(run_func(func, [feeds[p.param] for p in func.params], "compiled"))
        static = _model({n: a.shape for n, a in feeds.items()}, {"is_causal": 1}, ["Y"])
        _assert_matches_onnxruntime(static, feeds, got, f"{batch}x{seq}")


@pytest.mark.parametrize(("opset", "attrs", "nonpad", "mask"), [
    (24, {"is_causal": 1}, True, None),
    (25, {"left_window_size": 2, "right_window_size": 1}, False, None),
    (25, {"is_causal": 1, "left_window_size": 1}, True, None),
    (23, {}, False, TensorProto.FLOAT),
    (23, {"is_causal": 1}, False, TensorProto.BOOL),
])
def test_attention_beyond_onnxruntime(opset: int, attrs: dict[str, Any], nonpad: bool,
                                      mask: int | None) -> None:
    """nonpad_kv_seqlen (opset 24: keys past each batch's count are padding, and the causal
    frontier is bottom-right per batch), a sliding window (opset 25) and masks shorter than the
    keys (padded with -inf or False), against ONNX's reference evaluator: onnxruntime refuses
    them."""
    rng = np.random.default_rng(2)
    shapes = {"Q": (2, 2, 3, 4), "K": (2, 2, 6, 4), "V": (2, 2, 6, 4)}
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    if nonpad:
        feeds["nonpad_kv_seqlen"] = np.array([4, 6], np.int64)
        shapes["nonpad_kv_seqlen"] = (2,)
    if mask is not None:
        shapes["attn_mask"] = (2, 1, 3, 4)
        keep = rng.random(shapes["attn_mask"]) < 0.7
        feeds["attn_mask"] = keep if mask == TensorProto.BOOL else \
            np.where(keep, rng.standard_normal(keep.shape), -np.inf).astype(np.float32)
    model = _model(shapes, attrs, ["Y"], opset=opset, nonpad=nonpad,
                   mask_type=mask or TensorProto.FLOAT)
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    func = import_model(model).module.funcs[0]
    args = [feeds[p.param] for p in func.params]
    _, (bound,) = error_bounds(func, args)  # either f32 implementation's distance from exact
    for engine in ("reference", "compiled"):
        (got,) = run_onnx(model, feeds, engine)
        assert_within(got, want, 2 * bound, f"{engine} {opset} {attrs}")


@pytest.mark.parametrize("engine", ["reference", "compiled", "optimized"])
def test_a_row_of_minus_infinity_gives_zeros(engine: str) -> None:
    """Scores that are -inf across a row without any mask (an infinite query against keys of
    the other sign) softmax to zeros, as ONNX's reference has it, not to NaN."""
    rng = np.random.default_rng(3)
    shapes = {"Q": (1, 1, 3, 4), "K": (1, 1, 5, 4), "V": (1, 1, 5, 4)}
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    feeds["Q"][0, 0, 1, 0] = np.inf
    feeds["K"][..., 0] = -np.abs(feeds["K"][..., 0]) - 0.5
    model = _model(shapes, {}, ["Y"])
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    (got,) = run_onnx(model, feeds, engine)
    assert (want[0, 0, 1] == 0).all() and (got[0, 0, 1] == 0).all()
    func = import_model(model).module.funcs[0]
    _, (bound,) = error_bounds(func, [feeds[p.param] for p in func.params])
    assert_within(got, want, 2 * bound, engine)


def _bf16_truth(case: Any) -> np.ndarray:
    """A node test's Y computed by ONNX's reference in float64 from the same bf16 inputs, with
    sqrt(scale) rounded to bf16 as the op defines it (its function casts it to the inputs'
    type): the scale given is that square, exact in f32 and f64."""
    import ml_dtypes

    m = onnx.ModelProto()
    m.CopyFrom(case.model)
    node = m.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    q = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    head = q[3] if len(q) == 4 else q[2] // attrs["q_num_heads"]
    root = float(ml_dtypes.bfloat16(math.sqrt(attrs.get("scale", 1 / math.sqrt(head)))))
    node.attribute.extend([helper.make_attribute("scale", root * root)])
    for vi in [*m.graph.input, *m.graph.output]:
        if vi.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            vi.type.tensor_type.elem_type = TensorProto.DOUBLE
    feeds, _ = case.data_sets[0]
    names = [i.name for i in case.model.graph.input]
    f64 = {n: np.asarray(f).astype(np.float64) if np.asarray(f).dtype == ml_dtypes.bfloat16
           else np.asarray(f) for n, f in zip(names, feeds, strict=True)}
    return ReferenceEvaluator(m).run(None, f64)[0]


BF16_CASES = ["test_attention_4d_causal_bf16", "test_attention_3d_causal_bf16",
              "test_attention_4d_attn_mask_causal_bf16", "test_attention_4d_padded_kv_bf16",
              "test_attention_4d_causal_padded_kv_bf16"]


@pytest.mark.parametrize("name", BF16_CASES)
def test_bf16_node_tests_round_once(name: str) -> None:
    """ONNX's expected outputs for these cases round every step to bf16 (its reference runs
    NumPy on bf16 arrays), 1.2-1.7 bf16 ulps from the exact result; we compute in f32 and round
    once, so each result is within half an ulp of the float64 result, plus the f32 steps' error
    (the conformance suite marks these cases xfail for the 1e-3 rtol they cannot meet)."""
    from tcp_rules.frontends.onnx.conformance import node_cases, prepare

    (case,) = [c for c in node_cases() if c.name == name]
    p = prepare(case)
    truth = _bf16_truth(case)
    got = run_func(p.imported.module.funcs[0], p.inputs, "compiled")[0].astype(np.float64)
    # E bounds our distance from the exact result: the f32 steps, then one bf16 rounding.
    _, (bound,) = error_bounds(p.imported.module.funcs[0], p.inputs)
    assert np.all(np.abs(got - truth) <= bound), name
    # ... which ONNX's per-step rounding is not
    assert not np.all(np.abs(p.expected[0].astype(np.float64) - truth) <= bound), name


def test_attention_errors() -> None:
    shapes = {"Q": (1, 2, 12), "K": (1, 2, 12), "V": (1, 2, 12)}
    with pytest.raises(TcpError, match="3-D Q, K and V need the q_num_heads and kv_num_heads"):
        import_model(_model(shapes, {}, ["Y"]))
    with pytest.raises(TcpError, match="Q's hidden size 12 does not split into 5 heads"):
        import_model(_model(shapes, {"q_num_heads": 5, "kv_num_heads": 1}, ["Y"]))
    with pytest.raises(TcpError, match="4 query heads do not share 3 key/value heads evenly"):
        import_model(_model({"Q": (1, 4, 2, 3), "K": (1, 3, 2, 3), "V": (1, 3, 2, 3)}, {},
                            ["Y"]))
    with pytest.raises(TcpError, match=r"node 'attn' \(Attention, opset 23\): attn_mask's last "
                       r"axis \(9\) must not be longer than the keys \(2\)"):
        import_model(_model({"Q": (1, 1, 2, 3), "K": (1, 1, 2, 3), "V": (1, 1, 2, 3),
                             "attn_mask": (2, 9)}, {}, ["Y"]))


@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize(("rank", "attrs"), [
    (4, {}), (4, {"interleaved": 1}), (3, {"num_heads": 2, "rotary_embedding_dim": 4}),
    (3, {"num_heads": 2, "interleaved": 1, "rotary_embedding_dim": 6}),
])
def test_rotary_embedding_matches_onnxruntime(rank: int, attrs: dict[str, Any],
                                              engine: str) -> None:
    """RotaryEmbedding (opset 23), caches looked up by position_ids: halves or interleaved
    pairs, all of a head or its first rotary_embedding_dim entries."""
    rng = np.random.default_rng(rank + len(attrs))
    b, s, h, d, positions = 2, 5, 2, 8, 12
    shape = (b, h, s, d) if rank == 4 else (b, s, h * d)
    half = attrs.get("rotary_embedding_dim", d) // 2
    angles = np.arange(positions)[:, None] * rng.random(half)[None, :]
    feeds = {"X": rng.standard_normal(shape).astype(np.float32),
             "cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32),
             "pos": rng.integers(0, positions, (b, s)).astype(np.int64)}
    vis = [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape),
           helper.make_tensor_value_info("cos", TensorProto.FLOAT, (positions, half)),
           helper.make_tensor_value_info("sin", TensorProto.FLOAT, (positions, half)),
           helper.make_tensor_value_info("pos", TensorProto.INT64, (b, s))]
    node = helper.make_node("RotaryEmbedding", ["X", "cos", "sin", "pos"], ["Y"], **attrs)
    graph = helper.make_graph([node], "g", vis,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    got = run_onnx(model, feeds, engine)
    _assert_matches_onnxruntime(model, feeds, got, f"{engine} rank {rank} {attrs}")


def test_rotary_embedding_errors() -> None:
    def model(shape: tuple[int, ...], attrs: dict[str, Any]) -> onnx.ModelProto:
        vis = [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape),
               helper.make_tensor_value_info("cos", TensorProto.FLOAT, (1, 5, 2)),
               helper.make_tensor_value_info("sin", TensorProto.FLOAT, (1, 5, 2))]
        node = helper.make_node("RotaryEmbedding", ["X", "cos", "sin"], ["Y"], **attrs)
        graph = helper.make_graph([node], "g", vis, [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape)])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    with pytest.raises(TcpError, match="a 3-D input needs the num_heads attribute"):
        import_model(model((1, 5, 8), {}))
    with pytest.raises(TcpError, match="rotary_embedding_dim 3 must be even"):
        import_model(model((1, 1, 5, 4), {"rotary_embedding_dim": 3}))
    with pytest.raises(TcpError, match=r"the caches must give \[batch, seq, 1\]"):
        import_model(model((1, 1, 5, 4), {"rotary_embedding_dim": 2}))
