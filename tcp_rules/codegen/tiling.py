"""How a matmul is tiled: the register tile for the target, the blocks of rows, whether a
block of A is packed, and what each worker's scratch holds (codegen/matmul.py uses them, and
the program plan sizes the scratch with them)."""

from __future__ import annotations

from tcp_rules.codegen import jit
from tcp_rules.codegen.kernel import POST_ROWS, MatmulKernel
from tcp_rules.types import DType

MC = 96  # rows per block: an MC x K block of A stays in L2 while the panels pass
LINE = 64  # bytes: the parts of a worker's scratch start on cache lines
IN_PLACE_PANELS = 4  # up to this many panels of B, tiles read A in place (packs_a)


def tile_shape(dt: DType, target: jit.Target | None = None) -> tuple[int, int, int]:
    """(MR, NR, VF): register tile rows and columns, and vector lanes, for the target (default:
    the current one). 64-byte vectors with AVX-512 (32 registers), 32 with AVX (16), else 16
    (SSE: 16 registers, NEON: 32): wider vectors than the target has would be split in two and
    the tile would no longer fit in the registers."""
    t = target or jit.target()
    wide = t.has("avx512f")
    vf = (64 if wide else 32 if t.has("avx") else 16) // dt.itemsize
    if wide:
        return 8, 2 * vf, vf  # 16 accumulators of 32 registers
    return 6, 2 * vf, vf  # 12 accumulators of 16 registers


def packs_a(k: MatmulKernel, target: jit.Target | None = None) -> bool:
    """Whether the kernel packs each block of A (else its tiles read A where it lies). A packed
    block is read once per panel of B: with one or two panels (attention's P V, a narrow
    output) packing costs more than it saves, 2-8% measured on 512x512x64 to 2048x256x48;
    with four, reading in place was 2-5% faster on attention's batched 128x64x128 (Q K^T)
    and even on 1024x784x128 and 1024x1024x128 (f32, AVX-512, interleaved in one process;
    AVX2 code even on all of them); from eight panels on packing pays."""
    _, nr, _ = tile_shape(k.buffers[0].dtype, target)
    return not (isinstance(k.n, int) and k.n <= IN_PLACE_PANELS * nr)


def worker_scratch(k: MatmulKernel, kk: int, n: int, target: jit.Target | None = None
                   ) -> tuple[int, int]:
    """Bytes of one worker's scratch for ``k`` with these K and N, and where in it a row pass's
    block of product rows starts (MatmulKernel.post): first a packed block of A (a token size
    where tiles read A in place), then MC rows of the product, each on a cache line."""
    a = _lines(max(1, MC * kk if packs_a(k, target) else 1) * k.buffers[0].dtype.itemsize)
    if k.post is None:
        return a, a
    return a + _lines(MC * n * product_dtype(k).itemsize), a


def product_dtype(k: MatmulKernel) -> DType:
    """The dtype the matmul's epilogue stores: its output's, or the row pass's scratch's."""
    if k.post is None:
        return k.output.dtype
    return k.post.buffers[k.post_bufs.index(POST_ROWS)].dtype


def _lines(nbytes: int) -> int:
    return -(-nbytes // LINE) * LINE


def fused(target: jit.Target | None = None) -> bool:
    """Whether the target multiplies and adds in one instruction (x86 FMA3, any aarch64);
    without it llvm.fma is a libm call per lane, and the K loop multiplies, then adds."""
    t = target or jit.target()
    return t.has("fma") or t.arch == "aarch64"
