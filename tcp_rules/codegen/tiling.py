"""How a matmul is tiled: the register tile for the target, the blocks of rows, whether a
block of A is packed, and what each worker's scratch holds (codegen/matmul.py uses them, and
the program plan sizes the scratch with them).

f16 and bf16 products compute in f32, as the reference does (and a product of two f16 or bf16
values is exact in f32, so fused multiply-adds round as a multiply and an add would): their
operands are converted to f32 as they are packed, and the tiles, packed panels and blocks are
those of f32 (``packed_item``). Only where the tiles read A in place is A read as it is stored."""

from __future__ import annotations

from tcp_rules.codegen import jit
from tcp_rules.codegen.kernel import POST_ROWS, MatmulKernel, Size
from tcp_rules.types import DType

MC = 96  # rows per block: an MC x K block of A stays in L2 while the panels pass
LINE = 64  # bytes: the parts of a worker's scratch start on cache lines
IN_PLACE_PANELS = 4  # up to this many panels of B, tiles read A in place (packs_a)
GROUP_BYTES = 512 << 10  # a group of B's panels that fits in L2 with room (panel_groups)
MIN_GROUP_PANELS = 4  # a group's panels: enough to repay reading A once more


def tile_shape(dt: DType, target: jit.Target | None = None) -> tuple[int, int, int]:
    """(MR, NR, VF): register tile rows and columns, and vector lanes, for the target (default:
    the current one). 64-byte vectors with AVX-512 (32 registers), 32 with AVX (16), else 16
    (SSE: 16 registers, NEON: 32): wider vectors than the target has would be split in two and
    the tile would no longer fit in the registers."""
    t = target or jit.target()
    wide = t.has("avx512f")
    vf = (64 if wide else 32 if t.has("avx") else 16) // dt.compute.itemsize
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


def panel_groups(k: MatmulKernel, rows: int, kk: int, npan: int, nr: int, threads: int) -> int:
    """Into how many groups of B's panels the threads split a product of ``rows`` rows (its
    batches' together) with ``npan`` panels of ``kk`` x ``nr``, besides splitting the rows.

    A chunk of rows reads all of its group's panels once per block of MC rows. Chunks of
    fewer rows than MC (many threads, few rows) read B that many more times, and from L3 once
    B outgrows L2: 16 threads on 1024^3 split into chunks of 8 rows each read B's 4 MiB, 128
    times (16 threads on 2 CPUs took 1.5x as long as 2 threads; with groups, as long). So the
    panels are split until a chunk has MC rows or its group's panels fit in GROUP_BYTES,
    keeping MIN_GROUP_PANELS panels a group: each group reads (or packs) A again. A row pass
    needs all of a row's columns: one group."""
    from tcp_rules.codegen.program import CHUNKS_PER_THREAD  # (program imports this module)

    if threads <= 1 or k.post is not None or k.siblings or rows <= 0 or npan <= 0:
        return 1
    chunks = threads * CHUNKS_PER_THREAD
    item = packed_item(k)
    g = 1
    while g < npan // MIN_GROUP_PANELS and g * rows < chunks * MC and (
            kk * -(-npan // g) * nr * item > GROUP_BYTES):
        g += 1
    return -(-npan // -(-npan // g))  # as many as hold panels when each holds as many


def worker_scratch(k: MatmulKernel, kk: int, n: int, target: jit.Target | None = None
                   ) -> tuple[int, int]:
    """Bytes of one worker's scratch for ``k`` with these K and N, and where in it a row pass's
    block of product rows starts (MatmulKernel.post): first a packed block of A (a token size
    where tiles read A in place), then MC rows of the product, each on a cache line. With a
    second product (MatmulKernel.then) then the row pass's MC rows and the second product's
    own scratch (matmul.py lays these out the same way), and as much again for a third
    product (its ``then``) of the second's rows. With siblings, the largest product's."""
    a = whole_lines(max(1, MC * kk if packs_a(k, target) else 1) * packed_item(k))
    if k.post is None:  # (siblings: one product at a time, each its block of A)
        a = max([a, *(worker_scratch(sib, kk, static_n(sib.n), target)[0]
                      for sib in k.siblings)])
        return a, a
    rows = a + whole_lines(MC * n * product_dtype(k).itemsize)
    if k.then is None:
        return rows, a
    return rows + chained_scratch(k.then, n, target), a


def chained_scratch(t: MatmulKernel, kk: int, target: jit.Target | None = None) -> int:
    """Bytes of a worker's scratch for a chained product ``t`` of ``kk``-wide rows: MC of those
    rows and ``t``'s own scratch, then the same for its own ``then`` (their B are packed with
    ours, packed_b)."""
    assert isinstance(t.n, int)  # chain.py fuses only products of static N
    own = whole_lines(MC * kk * t.buffers[0].dtype.itemsize) + worker_scratch(t, kk, t.n, target)[0]
    return own + (chained_scratch(t.then, t.n, target) if t.then is not None else 0)


def packed_b(k: MatmulKernel, batch: int, kk: int, n: int, target: jit.Target | None = None
             ) -> tuple[int, int]:
    """Bytes and panels of what the kernel's step packs before its rows run
    (packing.emit_pack_all): B's panels for every batch, then each panel's largest magnitude;
    then each sibling product's the same (siblings.py); or with a chained product (``then``),
    its B's panels and magnitudes for each batch, a region per batch, and with a third
    product its B's once. Each region starts on a cache line. The chained products' B are
    packed here, once a call, rather than by each worker: with many threads every worker met
    every batch (with a single head, every chunk), and packed it again."""
    size, panels = _packed(k, batch, kk, n, target)
    for sib in k.siblings:  # (the same K: the same A)
        sib_size, sib_panels = _packed(sib, 1, kk, static_n(sib.n), target)
        size, panels = size + sib_size, panels + sib_panels
    t = k.then
    if t is not None:  # (t's K is our N: it multiplies our rows)
        t_size, t_panels = _packed(t, 1, n, static_n(t.n), target)
        size, panels = size + batch * t_size, panels + batch * t_panels
        if t.then is not None:
            u_size, u_panels = _packed(t.then, 1, static_n(t.n), static_n(t.then.n), target)
            size, panels = size + u_size, panels + u_panels
    return size, panels


def static_n(n: Size) -> int:
    """A chained or sibling product's N: static (chain.py and siblings.py take no other)."""
    assert isinstance(n, int)
    return n


def _packed(k: MatmulKernel, batch: int, kk: int, n: int, target: jit.Target | None
            ) -> tuple[int, int]:
    """Bytes (whole cache lines) and panels of one product's B packed (packing.emit_pack)."""
    _, nr, _ = tile_shape(k.buffers[0].dtype, target)
    npan = batch * -(-n // nr)
    return whole_lines((npan * kk * nr + npan) * packed_item(k)), npan


def packed_item(k: MatmulKernel) -> int:
    """Bytes of one packed element of A or B (and of the tile's): f16 and bf16 pack as f32."""
    return k.buffers[0].dtype.compute.itemsize


def product_dtype(k: MatmulKernel) -> DType:
    """The dtype the matmul's epilogue stores: its output's, or the row pass's scratch's."""
    if k.post is None:
        return k.output.dtype
    return k.post.buffers[k.post_bufs.index(POST_ROWS)].dtype


def whole_lines(nbytes: int) -> int:
    """``nbytes`` rounded up to whole cache lines: where the next part of a scratch starts."""
    return -(-nbytes // LINE) * LINE


def fused(target: jit.Target | None = None) -> bool:
    """Whether the target multiplies and adds in one instruction (x86 FMA3, any aarch64);
    without it llvm.fma is a libm call per lane, and the K loop multiplies, then adds."""
    t = target or jit.target()
    return t.has("fma") or t.arch == "aarch64"
