"""The generic MLIR syntax layer (tcp_rules/frontends/mlir/syntax.py): what it reads, golden
listings of its trees, and positioned syntax errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.frontends.mlir.syntax import Dict, Number, Shaped, Word, parse_mlir
from tcp_rules.frontends.mlir.views import format_tree, functions, named, render, split, view

DATA = Path(__file__).parent / "data" / "mlir"


def parse(text: str, name: str = "t.mlir"):  # type: ignore[no-untyped-def]
    return parse_mlir(Source(name, text))


@pytest.mark.parametrize("name", ["syntax_forms", "stablehlo_softmax", "stablehlo_mlp",
                                  "stablehlo_layernorm", "stablehlo_misc"])
def test_tree_listing(name: str, golden: Callable[[str, str], None]) -> None:
    path = DATA / f"{name}.mlir"
    golden(f"mlir/{name}.tree.txt", format_tree(parse(path.read_text(), path.name)))


def test_jax_stablehlo_reads_generically() -> None:
    """JAX's constructs: reduce ... applies, dense<0xFF800000>, contracting_dims = [1] x [0],
    result attributes, call, module attributes."""
    f = parse((DATA / "stablehlo_softmax.mlir").read_text())
    (main,) = functions(f)
    assert (main.name, main.visibility, [a.name for a in main.args]) == ("main", "public", ["arg0"])
    assert isinstance(main.results[0], Shaped) and main.results[0].dims == (4, 8)
    assert main.body is not None
    ops = main.body.blocks[0].ops
    cst = ops[0].body[0]
    assert isinstance(cst, Word) and cst.text == "dense" and cst.args is not None
    hexval = cst.args[0]
    assert isinstance(hexval, Number) and hexval.is_hex and hexval.value == 0xFF800000
    reduce = ops[1]
    assert reduce.name == "stablehlo.reduce" and reduce.results == ("0",)
    assert [w.text for w in reduce.body if isinstance(w, Word)] == [
        "applies", "stablehlo.maximum", "across", "dimensions"]
    mlp = functions(parse((DATA / "stablehlo_mlp.mlir").read_text()))
    assert [m.name for m in mlp] == ["main", "relu"]
    assert mlp[0].body is not None
    dot = mlp[0].body.blocks[0].ops[0]
    attrs = named(dot.body)
    assert [type(e).__name__ for e in attrs["contracting_dims"][1]] == ["Group", "Word", "Group"]
    assert len(split(dot.body)) == 4  # %arg0 | %arg1 | contracting_dims = ... | precision = ...


def test_spans_point_at_ops_and_names() -> None:
    f = parse("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
              "  %0 = tcp.tanh %a : tensor<2xf32> -> tensor<2xf32>\n"
              "\n"
              "  return %0 : tensor<2xf32>\n}\n")
    (fn,) = functions(f)
    assert fn.body is not None
    tanh, ret = fn.body.blocks[0].ops
    assert (tanh.span.line, tanh.span.col, tanh.name_span.col) == (2, 3, 8)  # type: ignore[union-attr]
    assert (ret.name, ret.span.line, ret.span.col) == ("return", 4, 3)
    assert isinstance(fn.args[0].attrs, type(None))


def test_generic_and_pretty_forms_read_alike() -> None:
    pretty = parse("%0 = tcp.add %a, %b {k = 1} : tensor<f32>, tensor<f32> -> tensor<f32>")
    generic = parse('%0 = "tcp.add"(%a, %b) {k = 1} : (tensor<f32>, tensor<f32>) -> tensor<f32>')
    p, g = pretty.ops[0], generic.ops[0]
    assert (p.name, p.results, p.generic) == ("tcp.add", ("0",), False)
    assert (g.name, g.results, g.generic) == ("tcp.add", ("0",), True)
    assert isinstance(p.body[3], Dict) and isinstance(g.body[1], Dict)
    for v in (view(p), view(g)):
        assert [x.name for x in v.operands] == ["a", "b"]
        assert v.attr("k") is not None and v.attrs is not None
        assert [render(t) for t in v.operand_types] == ["tensor<f32>", "tensor<f32>"]
        assert [render(t) for t in v.result_types] == ["tensor<f32>"]


def test_view_reads_keyword_groups_and_regions() -> None:
    f = parse("%1 = tcp.slice %a starts(%c0, %c0) sizes(%n, %c2) strides(%c1, %c1)"
              " : tensor<?x4xf32> -> tensor<?x2xf32>\n"
              "%2 = tcp.isolated_group %1 attributes {group_type = \"x\"} {\n"
              "  ^bb0(%b: tensor<?x2xf32>):\n"
              "    tcp.yield %b : tensor<?x2xf32>\n"
              "} : tensor<?x2xf32> -> tensor<?x2xf32>\n")
    s, g = view(f.ops[0]), view(f.ops[1])
    assert [x.name for x in s.operands] == ["a"]
    assert {k: render(v) for k, v in s.groups.items()} == {
        "starts": "(%c0, %c0)", "sizes": "(%n, %c2)", "strides": "(%c1, %c1)"}
    assert [x.name for x in g.operands] == ["1"] and g.attr("group_type") is not None
    (region,) = g.regions
    assert region.blocks[0].label == "bb0" and region.blocks[0].ops[0].name == "tcp.yield"


@pytest.mark.parametrize("text, where, needle", [
    ("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n",
     (2, 28), "end of file"),
    ("func.func @f(%a: tensor<2xf32) -> tensor<2xf32> {\n}\n", (1, 30), "unexpected"),
    ("%0 = tcp.add %a, %b : tensor<2xf32> -> ;\n", (1, 40), "character ';'"),
])
def test_syntax_errors_are_positioned(text: str, where: tuple[int, int], needle: str) -> None:
    with pytest.raises(TcpError) as e:
        parse(text)
    (d,) = e.value.diagnostics
    assert d.span is not None and (d.span.line, d.span.col) == where, d.render()
    assert needle in d.message and d.render().startswith(f"t.mlir:{where[0]}:{where[1]}: error")


def test_generic_form_properties_read_as_attributes() -> None:
    """MLIR's properties, ``<{...}>`` after a generic op's operands (JAX's gather)."""
    f = parse('%0 = "stablehlo.gather"(%a, %i) <{indices_are_sorted = false, slice_sizes = '
              'array<i64: 1, 4>}> {x = 1} : (tensor<4x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>')
    v = view(f.ops[0])
    assert [x.name for x in v.operands] == ["a", "i"]
    assert v.attrs is not None and [e.name for e in v.attrs.entries] == [
        "indices_are_sorted", "slice_sizes", "x"]
    assert [render(t) for t in v.result_types] == ["tensor<2x4xf32>"]
