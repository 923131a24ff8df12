"""The engines of the peers suite (tcp_rules/benchpeers.py) and the math namespaces the
workloads (tcp_rules/peerworkloads.py) are written over.

A namespace gives each engine's own form of the few mid-level ops the workloads use: NumPy as a
user writes it (SciPy's erf), JAX's ``jax.nn`` and ``jax.numpy`` under ``jax.jit``, PyTorch's
``torch.nn.functional`` (the fused kernels a PyTorch user calls). An engine is a callable that
runs the workload once and returns its result, made by :func:`runner`; NumPy and onnxruntime are
required, JAX and PyTorch are used when installed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcp_rules.peerworkloads import Workload

PEERS = ("numpy", "onnxruntime", "jax", "torch")
OPTIONAL = ("jax", "torch")
TANH_C = math.sqrt(2 / math.pi)


class ArrayMath:
    """The ops over an array module with NumPy's API (``xp``), written out as a user would."""

    xp: Any = np

    def erf(self, x: Any) -> Any:
        import scipy.special

        return scipy.special.erf(x)

    def relu(self, x: Any) -> Any:
        return self.xp.maximum(x, 0)

    def gelu_tanh(self, x: Any) -> Any:
        return 0.5 * x * (1 + self.xp.tanh(TANH_C * (x + 0.044715 * (x * x * x))))

    def gelu_erf(self, x: Any) -> Any:
        return 0.5 * x * (1 + self.erf(x * (1 / math.sqrt(2))))

    def softmax(self, x: Any) -> Any:
        e = self.xp.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def layernorm(self, x: Any, scale: Any, bias: Any, eps: float) -> Any:
        d = x - x.mean(axis=-1, keepdims=True)
        var = (d * d).mean(axis=-1, keepdims=True)
        return d / self.xp.sqrt(var + eps) * scale + bias

    def rmsnorm(self, x: Any, scale: Any, eps: float) -> Any:
        return x / self.xp.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * scale

    def matmul(self, a: Any, b: Any) -> Any:
        return self.xp.matmul(a, b)

    def attention(self, q: Any, k: Any, v: Any) -> Any:
        """softmax(q k^T / sqrt(d)) v over the last two axes."""
        s = self.matmul(q, self.xp.swapaxes(k, -1, -2)) / math.sqrt(q.shape[-1])
        return self.matmul(self.softmax(s), v)

    def split_heads(self, x: Any, heads: int) -> Any:
        """[B, S, D] -> [B, H, S, D/H]."""
        b, s, d = x.shape
        return x.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)

    def merge_heads(self, x: Any) -> Any:
        """[B, H, S, dk] -> [B, S, H dk]."""
        b, h, s, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, s, h * dk)


class JaxMath(ArrayMath):
    """``jax.numpy`` with ``jax.nn``'s activations and softmax, for ``jax.jit``."""

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp

        self.xp, self.nn, self.special = jnp, jax.nn, jax.scipy.special

    def erf(self, x: Any) -> Any:
        return self.special.erf(x)

    def relu(self, x: Any) -> Any:
        return self.nn.relu(x)

    def gelu_tanh(self, x: Any) -> Any:
        return self.nn.gelu(x, approximate=True)

    def gelu_erf(self, x: Any) -> Any:
        return self.nn.gelu(x, approximate=False)

    def softmax(self, x: Any) -> Any:
        return self.nn.softmax(x, axis=-1)


class TorchMath:
    """PyTorch's own kernels (``torch.nn.functional``) on CPU tensors."""

    def __init__(self) -> None:
        import torch
        import torch.nn.functional as F

        self.torch, self.F = torch, F

    def relu(self, x: Any) -> Any:
        return self.F.relu(x)

    def gelu_tanh(self, x: Any) -> Any:
        return self.F.gelu(x, approximate="tanh")

    def gelu_erf(self, x: Any) -> Any:
        return self.F.gelu(x)

    def softmax(self, x: Any) -> Any:
        return self.F.softmax(x, dim=-1)

    def layernorm(self, x: Any, scale: Any, bias: Any, eps: float) -> Any:
        return self.F.layer_norm(x, (x.shape[-1],), scale, bias, eps)

    def rmsnorm(self, x: Any, scale: Any, eps: float) -> Any:
        if hasattr(self.F, "rms_norm"):  # PyTorch 2.4 and later
            return self.F.rms_norm(x, (x.shape[-1],), scale, eps)
        return x * self.torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * scale

    def matmul(self, a: Any, b: Any) -> Any:
        return self.torch.matmul(a, b)

    def attention(self, q: Any, k: Any, v: Any) -> Any:
        if q.dim() == 2:  # the fused kernel takes a batch dim
            return self.F.scaled_dot_product_attention(q[None], k[None], v[None])[0]
        return self.F.scaled_dot_product_attention(q, k, v)

    def split_heads(self, x: Any, heads: int) -> Any:
        b, s, d = x.shape
        return x.reshape(b, s, heads, d // heads).permute(0, 2, 1, 3)

    def merge_heads(self, x: Any) -> Any:
        b, h, s, dk = x.shape
        return x.permute(0, 2, 1, 3).reshape(b, s, h * dk)


NUMPY = ArrayMath()


def installed() -> dict[str, str | None]:
    """The version of each peer, None for one that is not installed (found without importing
    it: JAX sizes its thread pool when it is first imported and used)."""
    out: dict[str, str | None] = {}
    for name in PEERS:
        if importlib.util.find_spec(name) is None:
            out[name] = None
            continue
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "unknown version"
    return out


@dataclass
class Runner:
    """One engine on one workload: ``run()`` computes the result once (what is timed),
    ``to_numpy`` turns that result into a NumPy array for the check."""

    run: Callable[[], Any]
    to_numpy: Callable[[Any], np.ndarray] = np.asarray


def onnxruntime_runner(w: Workload, threads: int) -> Runner:
    """An onnxruntime session on the workload's model: ``threads`` intra-op threads (not
    spinning between runs), one inter-op thread, every graph optimization, the CPU provider."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # onnxruntime's pool threads spin for a while after each run: interleaved with the other
    # engines they hold a core the next engine's threads need (measured: tcp-rules' 2-thread
    # tanh 10.7 ms after a spinning session's run, 6.0 ms otherwise; onnxruntime itself 2.8 vs
    # 2.6 ms without spinning).
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(w.model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return Runner(lambda: sess.run(None, w.feeds)[0])


_namespaces: dict[str, Any] = {}


def _namespace(engine: str) -> Any:
    if engine not in _namespaces:
        _namespaces[engine] = JaxMath() if engine == "jax" else TorchMath()
    return _namespaces[engine]


def jax_runner(w: Workload) -> Runner:
    """``jax.jit`` of the workload's computation, weights passed as arguments (as tcp-rules
    takes them); inputs already on the CPU; each run waits for its result."""
    import jax

    m, names = _namespace("jax"), sorted(w.arrays)
    fn = jax.jit(lambda *vals: w.compute(m, dict(zip(names, vals, strict=True))))
    # on the CPU where a GPU is present too: the computation follows its committed inputs
    cpu = jax.devices("cpu")[0]
    args = [jax.device_put(w.arrays[n], cpu) for n in names]
    return Runner(lambda: fn(*args).block_until_ready())


def torch_runner(w: Workload, threads: int) -> Runner:
    """The computation in eager PyTorch on tensors sharing the NumPy arrays' memory, with
    ``threads`` intra-op threads and gradients off."""
    import torch

    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    m = _namespace("torch")
    args = {n: torch.from_numpy(a) for n, a in w.arrays.items()}
    return Runner(lambda: w.compute(m, args),
                  lambda t: t.detach().numpy())


def runner(engine: str, w: Workload, threads: int) -> Runner:
    """The runner of peer ``engine`` (one of PEERS) on ``w``."""
    if engine == "numpy":
        return Runner(lambda: w.compute(NUMPY, w.arrays))
    if engine == "onnxruntime":
        return onnxruntime_runner(w, threads)
    if engine == "jax":
        return jax_runner(w)
    if engine == "torch":
        return torch_runner(w, threads)
    raise ValueError(f"unknown engine {engine!r}")
