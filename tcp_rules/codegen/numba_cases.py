"""Numba versions of the benchmark cases (imported only when Numba is installed)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np


def kernels() -> dict[str, Callable[..., Any]]:
    """Single-threaded @njit loops, compiled on first call."""
    @numba.njit(fastmath=False, cache=False)
    def fma_relu(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
        for i in range(a.size):
            out[i] = max(a[i] * b[i] + c[i], 0.0)

    @numba.njit
    def gelu(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            v = x[i]
            out[i] = v * 0.5 * (math.tanh((v + v * v * v * 0.044715) * 0.7978845608028654) + 1)

    @numba.njit
    def bias_relu(x: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                out[i, j] = max(x[i, j] + b[j], 0.0)

    @numba.njit
    def softmax(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.shape[0]):
            m = -np.inf
            for j in range(x.shape[1]):
                m = max(m, x[i, j])
            s = 0.0
            for j in range(x.shape[1]):
                e = math.exp(x[i, j] - m)
                out[i, j] = e
                s += e
            for j in range(x.shape[1]):
                out[i, j] /= s

    @numba.njit
    def layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        n = x.shape[1]
        for i in range(x.shape[0]):
            mu = 0.0
            for j in range(n):
                mu += x[i, j]
            mu /= n
            var = 0.0
            for j in range(n):
                var += (x[i, j] - mu) ** 2
            inv = 1.0 / math.sqrt(var / n + 1e-5)
            for j in range(n):
                out[i, j] = (x[i, j] - mu) * inv * g[j] + b[j]

    @numba.njit
    def total(x: np.ndarray) -> float:
        s = 0.0
        for i in range(x.size):
            s += x[i]
        return s

    @numba.njit
    def colsum(x: np.ndarray, out: np.ndarray) -> None:
        out[:] = 0.0
        for i in range(x.shape[0]):  # along the rows, as a C programmer would write it
            for j in range(x.shape[1]):
                out[j] += x[i, j]

    @numba.njit
    def transpose(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.shape[1]):
            for j in range(x.shape[0]):
                out[i, j] = x[j, i]

    return {"fma_relu": fma_relu, "gelu": gelu, "bias_relu": bias_relu, "softmax": softmax,
            "layernorm": layernorm, "sum": total, "colsum": colsum, "transpose": transpose}
