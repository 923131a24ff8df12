"""JAX functions whose StableHLO the importer is tested on, each with an independent NumPy
reference (computed in f64) and its argument shapes.

tests/data/stablehlo/<name>.mlir holds each one's text as ``jax.jit(f).lower(*args).as_text()``
gave it (regenerate with ``python tests/stablehlo_models.py``, which needs jax), so the import is
tested without jax too; with jax, tests/test_stablehlo_import.py lowers them afresh and compares
with JAX's own results.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

F32, I32 = np.float32, np.int32
Shapes = list[tuple[tuple[int, ...], Any]]
DATA = Path(__file__).parent / "data" / "stablehlo"


def _softmax_np(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layernorm_np(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def _gelu_tanh_np(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _gelu_erf_np(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _attention_np(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    return _softmax_np(q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])) @ v


def _movement_np(x: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, ...]:
    return (x[1:3, ::2], np.concatenate([x, 2 * x], axis=0), x.T.reshape(2, 16),
            np.where(x > 0.5, x, -x), np.clip(x, -0.5, 0.5), np.arange(8.0) + x,
            np.sign(x), np.round(x * 2), np.prod(x, 0), np.all(x > -1, axis=1),
            np.take(x, np.clip(i, 0, 7), axis=1), x @ x[0], np.max(x), np.min(x, 0),
            np.sum(x.astype(np.int32), 0), np.pad(x, ((1, 2), (0, 3)), constant_values=1.5))


def _stats_np(x: np.ndarray) -> tuple[np.ndarray, ...]:
    m = x.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(np.log(x))
    return (np.log(np.exp(x - m).sum(axis=1)) + m[:, 0], x.var(0), x[::-1, ::-1],
            np.where(finite, x, 0.0))


def _argmax_np(x: np.ndarray) -> tuple[np.ndarray, ...]:
    r = np.round(x)  # ties: the first index wins
    return (np.argmax(r, 1), np.argmin(r, 0), np.argmax(np.where(x > 1.2, np.nan, x), 1),
            np.argmax(r.astype(np.int32), 1))


def jax_functions() -> dict[str, Callable[..., Any]]:
    """The JAX side (imports jax)."""
    import jax
    import jax.numpy as jnp

    def layernorm(x: Any, g: Any, b: Any) -> Any:
        m = jnp.mean(x, -1, keepdims=True)
        v = jnp.mean((x - m) ** 2, -1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5) * g + b

    def attention(q: Any, k: Any, v: Any) -> Any:
        s = jnp.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.shape[-1])
        return jax.nn.softmax(s, axis=-1) @ v

    def movement(x: Any, i: Any) -> tuple[Any, ...]:
        return (x[1:3, ::2], jnp.concatenate([x, 2 * x], axis=0), x.T.reshape(2, 16),
                jnp.where(x > 0.5, x, -x), jnp.clip(x, -0.5, 0.5), jnp.arange(8.0) + x,
                jnp.sign(x), jnp.round(x * 2), jnp.prod(x, 0), jnp.all(x > -1, axis=1),
                jnp.take(x, i, axis=1, mode="clip"), x @ x[0], jnp.max(x), jnp.min(x, 0),
                jnp.sum(x.astype(jnp.int32), 0),
                jnp.pad(x, ((1, 2), (0, 3)), constant_values=1.5))

    def stats(x: Any) -> tuple[Any, ...]:
        return (jax.nn.logsumexp(x, axis=1), jnp.var(x, 0), x[::-1, ::-1],
                jnp.where(jnp.isfinite(jnp.log(x)), x, 0.0))

    def argmax(x: Any) -> tuple[Any, ...]:
        r = jnp.round(x)
        return (jnp.argmax(r, 1), jnp.argmin(r, 0),
                jnp.argmax(jnp.where(x > 1.2, jnp.nan, x), 1),
                jnp.argmax(r.astype(jnp.int32), 1))

    def positions(x: Any) -> Any:  # a symbolic length's arange: dynamic_iota
        return x + jnp.arange(x.shape[0], dtype=x.dtype)[:, None]

    return {"softmax": lambda x: jax.nn.softmax(x, axis=-1), "layernorm": layernorm,
            "positions": positions,
            "stats": stats, "argmax": argmax,
            "mlp": lambda x, w, b: jax.nn.relu(x @ w + b),
            "gelu_tanh": lambda x: jax.nn.gelu(x, approximate=True),
            "gelu_erf": lambda x: jax.nn.gelu(x, approximate=False),
            "attention": attention, "movement": movement}


MODELS: dict[str, tuple[Callable[..., Any], Shapes]] = {
    "softmax": (_softmax_np, [((4, 16), F32)]),
    "layernorm": (_layernorm_np, [((4, 16), F32), ((16,), F32), ((16,), F32)]),
    "mlp": (lambda x, w, b: np.maximum(x @ w + b, 0), [((4, 8), F32), ((8, 16), F32),
                                                         ((16,), F32)]),
    "gelu_tanh": (_gelu_tanh_np, [((4, 16), F32)]),
    "gelu_erf": (_gelu_erf_np, [((4, 16), F32)]),
    "attention": (_attention_np, [((2, 4, 8), F32)] * 3),
    "movement": (_movement_np, [((4, 8), F32), ((5,), I32)]),
    "stats": (_stats_np, [((4, 8), F32)]),
    "argmax": (_argmax_np, [((6, 8), F32)]),
    "positions": (lambda x: x + np.arange(x.shape[0])[:, None], [((6, 3), F32)]),
}


# shape-polymorphic lowerings (jax.export.symbolic_args_specs): model -> the shapes' specs
SYMBOLIC: dict[str, list[str]] = {"softmax": ["b, 16"], "mlp": ["b, 8", "8, 16", "16"],
                                  "layernorm": ["b, 16", "16", "16"], "positions": ["b, 3"]}


def inputs(name: str, seed: int = 0) -> list[np.ndarray]:
    """Seeded arguments for a model (indices partly out of range: gathers clamp them)."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in MODELS[name][1]:
        if dtype is I32:
            out.append(rng.integers(-3, 11, shape).astype(I32))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


def write_files() -> None:
    """Lower every model with JAX into tests/data/stablehlo/."""
    import jax

    fns = jax_functions()
    for name in MODELS:
        text = jax.jit(fns[name]).lower(*inputs(name)).as_text()
        (DATA / f"{name}.mlir").write_text(
            f"// {name} of tests/stablehlo_models.py: jax.jit(f).lower(*args).as_text(), "
            f"jax {jax.__version__}\n{text}")
    for name, specs in SYMBOLIC.items():
        args = jax.export.symbolic_args_specs(inputs(name), specs)
        text = jax.jit(fns[name]).lower(*args).as_text()
        (DATA / f"{name}_symbolic.mlir").write_text(
            f"// {name} of tests/stablehlo_models.py, its shapes {specs}: jax.jit(f).lower("
            f"*jax.export.symbolic_args_specs(args, shapes)).as_text(), jax {jax.__version__}\n"
            f"{text}")


def lower_all(directory: Path, seed: int) -> None:
    """Lower every model with JAX on ``inputs(name, seed)`` into ``directory``: <name>.mlir
    and <name>.npz (JAX's results, result0, result1, ...). The tests run this in a child
    process, so jax's threads never meet the forks of the process that imports its text."""
    import jax

    fns = jax_functions()
    for name in MODELS:
        fn = jax.jit(fns[name])
        args = inputs(name, seed)
        (directory / f"{name}.mlir").write_text(fn.lower(*args).as_text())
        got = fn(*args)
        got = got if isinstance(got, tuple) else (got,)
        np.savez(directory / f"{name}.npz", **{f"result{i}": np.asarray(g)
                                              for i, g in enumerate(got)})


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--lower"]:
        lower_all(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        write_files()
