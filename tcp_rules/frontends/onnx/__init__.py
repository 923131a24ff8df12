"""The ONNX importer: ``import_onnx(path)`` gives a TCP module (see docs/frontends/onnx.md).

Needs the optional ``onnx`` package (``pip install 'tcp-rules[onnx]'``). Converters register
themselves by ONNX op type when their modules are imported below.
"""

from __future__ import annotations

from tcp_rules.frontends.onnx import (  # noqa: F401 (registers)
    attention,
    composite,
    conv,
    einsum,
    elementwise,
    gathers,
    losses,
    movement,
    pools,
    quantize,
    ranges,
    recurrent,
    resize,
    scatters,
    signal,
)
from tcp_rules.frontends.onnx.context import CONVERTERS, INLINE_LIMIT, NeedsConstant
from tcp_rules.frontends.onnx.model import import_model, import_onnx, load_model

__all__ = ["CONVERTERS", "INLINE_LIMIT", "NeedsConstant", "import_model", "import_onnx",
           "load_model"]
