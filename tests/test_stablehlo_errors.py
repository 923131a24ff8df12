"""Malformed or unsupported StableHLO: a positioned error naming the op or the problem, exit
status 1, no traceback, through ``tcpr import`` and ``tcpr run``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcp_rules.cli import main
from tcp_rules.diagnostics import Source
from tcp_rules.frontends.mlir import import_text
from tcp_rules.types import DType

# malformed and unsupported StableHLO -------------------------------------------------------

_OK = """func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<2x1xi32>) -> tensor<4xf32> {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  BAD
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1]
      : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
BAD = {
    "unknown op": ('%9 = stablehlo.custom_call @foo(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>',
                   (3, 8), "unknown op 'stablehlo.custom_call'"),
    "region op": ('%9 = stablehlo.while(%iterArg = %cst) : tensor<f32>\n   cond {\n'
                  '    stablehlo.return %iterArg : tensor<f32>\n  } do {\n'
                  '    stablehlo.return %iterArg : tensor<f32>\n  }',
                  (3, 8), "unknown op 'stablehlo.while'"),
    "unknown dialect op": ('%9 = mhlo.add %arg0, %arg0 : tensor<4x8xf32>', (3, 8),
                           "unknown op 'mhlo.add'"),
    "bad type": ('%9 = stablehlo.add %arg0, %arg0 : tensor<4x8xfoo>', (3, 48),
                 "element type foo is not supported"),
    "bitwise": ('%9 = stablehlo.and %arg1, %arg1 : tensor<2x1xi32>', (3, 8),
                "no bitwise ops"),
    "total order": ('%9 = stablehlo.compare LT, %arg0, %arg0, TOTALORDER : (tensor<4x8xf32>, '
                    'tensor<4x8xf32>) -> tensor<4x8xi1>', (3, 3), "TOTALORDER"),
    "dot shape": ('%9 = stablehlo.dot_general %arg0, %arg0, contracting_dims = [0, 1] x [0, 1]'
                  ' : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>', (3, 3),
                  "matmul shape"),
    "reduce body": ('%9 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [1] : '
                    '(tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>\n'
                    '   reducer(%a: tensor<f32>, %b: tensor<f32>)  {\n'
                    '    %s = stablehlo.subtract %a, %b : tensor<f32>\n'
                    '    stablehlo.return %s : tensor<f32>\n  }', (5, 10),
                    "stablehlo.subtract is not supported"),
    "variadic reduce": ('%9:2 = stablehlo.reduce(%arg0 init: %cst), (%arg0 init: %cst) across '
                        'dimensions = [1] : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, '
                        'tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)\n'
                        '   reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<f32>, '
                        '%d: tensor<f32>)  {\n    stablehlo.return %a, %b : tensor<f32>, '
                        'tensor<f32>\n  }', (3, 3), "read only as JAX's argmax or argmin"),
    "gather": ('%9 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<'
               'offset_dims = [0, 1], start_index_map = [1], index_vector_dim = 1>, '
               'slice_sizes = array<i64: 4, 2>}> : (tensor<4x8xf32>, tensor<2x1xi32>) -> '
               'tensor<4x2x2xf32>', (3, 3), "take along one axis"),
    "dynamic broadcast": ('%9 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> '
                          'tensor<?xf32>', (3, 3), "dynamic (?)"),
    "shape operand": ('%9 = stablehlo.dynamic_broadcast_in_dim %cst, %arg1, dims = [] : '
                      '(tensor<f32>, tensor<2x1xi32>) -> tensor<?x?xf32>', (3, 3),
                      "a shape must be an integer vector"),
    "undefined value": ('%9 = stablehlo.add %nope, %arg0 : tensor<4x8xf32>', (3, 22),
                        "undefined value %nope"),
    "unterminated region": ("%9 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [1] : "
                            "(tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>\n   reducer(%a: "
                            "tensor<f32>, %b: tensor<f32>)  {\n    %s = stablehlo.add %a, %b : "
                            "tensor<f32>\n", None, "not closed"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("command", ["import", "run"])
def test_bad_stablehlo_is_a_positioned_error(case: str, command: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    line, where, needle = BAD[case]
    text = _OK.replace("BAD", line)
    if case == "unterminated region":
        text = text[:text.index(line) + len(line)]
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    argv = [command, str(path)] + (["--random"] if command == "run" else [])
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "error:" in err and "Traceback" not in out + err and needle in err, err
    if where is not None:
        assert f"{path}:{where[0]}:{where[1]}:" in err, err
    else:
        assert f"{path}:" in err


def test_the_ok_template_imports() -> None:
    """The malformed cases differ from a file that imports only in their one line."""
    func = import_text(Source("ok.mlir", _OK.replace("BAD", ""))).module.funcs[0]
    assert func.result_types[0].dtype is DType.F32
