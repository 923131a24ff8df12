"""One native entry per compiled func: a runner that walks a step table, and its memory plan.

A compiled func calls native code once per call: ``tcpr_run(pool, prog, slots, threads, first,
last, times, clock)`` resolves every buffer's address, then runs steps [first, last) in order,
each kernel split into chunks over the thread pool (pool.py) when it is large. ``prog`` is an
int64 table that :func:`layout` builds once per binding of the symbols (its shapes decide sizes,
splits and the arena), ``slots`` the addresses that change per call: the inputs, the results and
the arena. Kernels stay compiled and cached one by one; the runner reaches them through their
addresses in the table, with a trampoline per argument count (kernels take their buffers as
separate ``noalias`` pointers, which is what lets LLVM vectorize them).

Intermediates live in one arena per call shape, reused between calls (a free list, so that
concurrent callers each get their own): every temporary gets an offset by first fit over its live
range (from the step that writes it to the last step that reads it or a view of it). Two buffers
of one step never share memory: kernels' pointers are ``noalias``. A matmul's packed B panels and
each worker's packed block of A are temporaries of their own step, as are the column
accumulators of each worker of a kernel with column reductions (columns.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tcp_rules.codegen.columns import chunk_columns, column_scratch
from tcp_rules.codegen.jit import Target
from tcp_rules.codegen.kernel import MatmulKernel
from tcp_rules.codegen.plan import Instance, Plan
from tcp_rules.codegen.tiling import (
    packed_b,
    packed_item,
    panel_groups,
    static_n,
    tile_shape,
    worker_scratch,
)

SPLIT_WORK = 1 << 19  # below this many element-steps a kernel runs on the calling thread
# below this many elements a matmul's step packs on the calling thread: a copy of 256 KB takes
# one core some 20 us, several times what handing chunks to the pool costs (the step packs
# attention's V for every head, which the workers used to pack in parallel: the ONNX
# Attention body at 2 threads took 10% longer with the 2^19 above)
SPLIT_PACK = 1 << 16
CHUNKS_PER_THREAD = 8  # chunks per thread: a core slowed by other processes takes fewer
ALIGN = 64  # bytes: every arena buffer starts on a cache line

# The table's layout (int64 words). Header: buffer count, step count, where the buffer table
# (slot, offset per buffer: address = slots[slot] + offset, or offset alone if slot < 0) and the
# step records (STEP_WORDS each) start; argument lists follow.
HEADER = 4
STEP_WORDS = 16
# Step record fields.
KIND, FN, NARGS, ARGS, SIZES, EXTENT, NCHUNKS, ALIGN_ROWS = range(8)
PACK_FN, PANELS, PACK_CHUNKS, SCRATCH_ARG, SCRATCH_BYTES = range(8, 13)
KERNEL, MATMUL = 0, 1
CTX_WORDS = 10  # a chunk job: fn, args, nargs, sizes, extent, chunks, align, scratch pos/base/size


def runner_ir(max_args: int) -> str:
    """``tcpr_run`` and its chunk function for kernels of up to ``max_args`` pointers; the
    text goes in one module after pool.pool_ir (it calls tcpr_parallel)."""
    cases = " ".join(f"i64 {n}, label %a{n}" for n in range(1, max_args + 1))
    tramps = []
    for n in range(1, max_args + 1):
        lines = [f"a{n}:"]
        for j in range(n):
            lines += [f"  %a{n}.{j}.p = getelementptr ptr, ptr %args, i64 {j}",
                      f"  %a{n}.{j}.v = load ptr, ptr %a{n}.{j}.p",
                      f"  %a{n}.{j}.s = icmp eq i64 %pos, {j}",
                      f"  %a{n}.{j} = select i1 %a{n}.{j}.s, ptr %scratch, ptr %a{n}.{j}.v"]
        params = ", ".join(f"ptr %a{n}.{j}" for j in range(n))
        lines += [f"  call void %fn({params}, ptr %sizes, i64 %lo, i64 %hi)", "  ret void"]
        tramps.append("\n".join(lines))
    trampolines = "\n".join(tramps)

    def word(name: str, base: str, index: int | str, ty: str = "i64") -> str:
        return (f"  %{name}.p = getelementptr i64, ptr %{base}, i64 {index}\n"
                f"  %{name} = load {ty}, ptr %{name}.p")

    def put(base: str, index: int, val: str, ty: str = "i64") -> str:
        return (f"  %{base}.{index} = getelementptr i64, ptr %{base}, i64 {index}\n"
                f"  store {ty} {val}, ptr %{base}.{index}")

    def job(ctx: str, vals: list[tuple[str, str]]) -> str:
        return "\n".join(put(ctx, i, v, ty) for i, (v, ty) in enumerate(vals))

    return f"""
declare i32 @clock_gettime(i32, ptr)
declare i64 @llvm.smax.i64(i64, i64)

; Chunk t's first row: ceil(ceil(extent * t / k) / align) * align, the extent for t >= k.
define internal i64 @tcpr_bound(i64 %t, i64 %ext, i64 %k, i64 %al) alwaysinline nounwind {{
  %last = icmp sge i64 %t, %k
  %x = mul i64 %ext, %t
  %x1 = add i64 %x, %k
  %x2 = sub i64 %x1, 1
  %q = sdiv i64 %x2, %k
  %q1 = add i64 %q, %al
  %q2 = sub i64 %q1, 1
  %q3 = sdiv i64 %q2, %al
  %r = mul i64 %q3, %al
  %m = call i64 @llvm.smin.i64(i64 %r, i64 %ext)
  %v = select i1 %last, i64 %ext, i64 %m
  ret i64 %v
}}

; One chunk of one kernel: rows [lo, hi), with this worker's scratch in its argument slot.
define internal void @tcpr_chunk(ptr %ctx, i64 %c, i64 %wid) nounwind {{
entry:
{word("fn", "ctx", 0, "ptr")}
{word("args", "ctx", 1, "ptr")}
{word("nargs", "ctx", 2)}
{word("sizes", "ctx", 3, "ptr")}
{word("ext", "ctx", 4)}
{word("k", "ctx", 5)}
{word("al", "ctx", 6)}
{word("pos", "ctx", 7)}
{word("sb", "ctx", 8, "ptr")}
{word("sbytes", "ctx", 9)}
  %lo = call i64 @tcpr_bound(i64 %c, i64 %ext, i64 %k, i64 %al)
  %c1 = add i64 %c, 1
  %hi = call i64 @tcpr_bound(i64 %c1, i64 %ext, i64 %k, i64 %al)
  %soff = mul i64 %wid, %sbytes
  %scratch = getelementptr i8, ptr %sb, i64 %soff
  switch i64 %nargs, label %none [ {cases} ]
none:
  ret void
{trampolines}
}}

define internal i64 @tcpr_now(i32 %clock, ptr %ts) nounwind {{
  call i32 @clock_gettime(i32 %clock, ptr %ts)
  %s = load i64, ptr %ts
  %nsp = getelementptr i64, ptr %ts, i64 1
  %ns = load i64, ptr %nsp
  %s9 = mul i64 %s, 1000000000
  %t = add i64 %s9, %ns
  ret i64 %t
}}

define void @tcpr_run(ptr %pool, ptr %prog, ptr %slots, i64 %threads, i64 %s0, i64 %s1,
                      ptr %times, i32 %clock) nounwind {{
entry:
  %ts = alloca [2 x i64]
  %ctx = alloca [{CTX_WORDS} x i64]
  %pctx = alloca [{CTX_WORDS} x i64]
  %args = alloca [{max_args} x ptr]
{word("nb", "prog", 0)}
{word("bt", "prog", 2)}
{word("stt", "prog", 3)}
  %ptrs = alloca ptr, i64 %nb
  %timed = icmp ne ptr %times, null
  br label %buf
buf:                                      ; every buffer's address
  %i = phi i64 [0, %entry], [%i1, %buf.body]
  %bdone = icmp sge i64 %i, %nb
  br i1 %bdone, label %step, label %buf.body
buf.body:
  %i2 = mul i64 %i, 2
  %bo = add i64 %bt, %i2
{word("slot", "prog", "%bo")}
  %bo1 = add i64 %bo, 1
{word("off", "prog", "%bo1")}
  %neg = icmp slt i64 %slot, 0
  %sl = select i1 %neg, i64 0, i64 %slot
{word("sv", "slots", "%sl")}
  %base = select i1 %neg, i64 0, i64 %sv
  %addr = add i64 %base, %off
  %bp = inttoptr i64 %addr to ptr
  %pslot = getelementptr ptr, ptr %ptrs, i64 %i
  store ptr %bp, ptr %pslot
  %i1 = add i64 %i, 1
  br label %buf
step:
  %s = phi i64 [%s0, %buf], [%snext, %stepped]
  %sdone = icmp sge i64 %s, %s1
  br i1 %sdone, label %out, label %step.start
step.start:
  br i1 %timed, label %clock0, label %step.body
clock0:
  %tick0 = call i64 @tcpr_now(i32 %clock, ptr %ts)
  br label %step.body
step.body:
  %t0 = phi i64 [0, %step.start], [%tick0, %clock0]
  %r0 = mul i64 %s, {STEP_WORDS}
  %r1 = add i64 %stt, %r0
  %rec = getelementptr i64, ptr %prog, i64 %r1
{word("kind", "rec", KIND)}
{word("kfn", "rec", FN, "ptr")}
{word("na", "rec", NARGS)}
{word("aoff", "rec", ARGS)}
{word("ksizes", "rec", SIZES, "ptr")}
{word("kext", "rec", EXTENT)}
{word("kch", "rec", NCHUNKS)}
{word("kal", "rec", ALIGN_ROWS)}
  br label %arg
arg:                                      ; the kernel's pointer arguments
  %j = phi i64 [0, %step.body], [%j1, %arg.body]
  %adone = icmp sge i64 %j, %na
  br i1 %adone, label %kind.test, label %arg.body
arg.body:
  %ja = add i64 %aoff, %j
{word("bix", "prog", "%ja")}
  %bpp = getelementptr ptr, ptr %ptrs, i64 %bix
  %bptr = load ptr, ptr %bpp
  %aslot = getelementptr ptr, ptr %args, i64 %j
  store ptr %bptr, ptr %aslot
  %j1 = add i64 %j, 1
  br label %arg
kind.test:
  %ismm = icmp eq i64 %kind, {MATMUL}
  br i1 %ismm, label %pack, label %call
pack:                                     ; a matmul packs first (split over panels)
{word("pfn", "rec", PACK_FN, "ptr")}
{word("npan", "rec", PANELS)}
{word("pch", "rec", PACK_CHUNKS)}
{job("pctx", [("%pfn", "ptr"), ("%args", "ptr"), ("%na", "i64"), ("%ksizes", "ptr"),
              ("%npan", "i64"), ("%pch", "i64"), ("1", "i64"), ("-1", "i64"), ("null", "ptr"),
              ("0", "i64")])}
  %pn = call i64 @llvm.smax.i64(i64 %pch, i64 1)
  call void @tcpr_parallel(ptr %pool, ptr @tcpr_chunk, ptr %pctx, i64 %pn, i64 %threads)
  br label %call
call:                                     ; then every kernel runs its chunks
{word("spos", "rec", SCRATCH_ARG)}
{word("sbytes", "rec", SCRATCH_BYTES)}
  %ispos = icmp sge i64 %spos, 0
  %sposc = select i1 %ispos, i64 %spos, i64 0
  %sbasep = getelementptr ptr, ptr %args, i64 %sposc
  %sbase = load ptr, ptr %sbasep
{job("ctx", [("%kfn", "ptr"), ("%args", "ptr"), ("%na", "i64"), ("%ksizes", "ptr"),
             ("%kext", "i64"), ("%kch", "i64"), ("%kal", "i64"), ("%spos", "i64"),
             ("%sbase", "ptr"), ("%sbytes", "i64")])}
  %kn = call i64 @llvm.smax.i64(i64 %kch, i64 1)
  call void @tcpr_parallel(ptr %pool, ptr @tcpr_chunk, ptr %ctx, i64 %kn, i64 %threads)
  br i1 %timed, label %clock1, label %stepped
clock1:
  %tick1 = call i64 @tcpr_now(i32 %clock, ptr %ts)
  %dt = sub i64 %tick1, %t0
  %tslot = getelementptr i64, ptr %times, i64 %s
  store i64 %dt, ptr %tslot
  br label %stepped
stepped:
  %snext = add i64 %s, 1
  br label %step
out:
  ret void
}}
"""


@dataclass
class Layout:
    """The step table and arena of one compiled func for one binding of its symbols."""

    prog: np.ndarray  # int64: header, buffer table, step records, argument lists
    arena_bytes: int
    nslots: int  # inputs, then results, then the arena
    kept: list[np.ndarray] = field(default_factory=list)  # what prog points into
    _free: list[np.ndarray] = field(default_factory=list)  # arenas no call is using

    @property
    def address(self) -> int:
        """The table's address, for the runner."""
        return int(self.prog.ctypes.data)

    @property
    def nsteps(self) -> int:
        """The number of steps (kernels) the runner walks."""
        return int(self.prog[1])

    def take_raw(self) -> np.ndarray:
        """A free arena, allocated if none is (list.pop and append are atomic: concurrent
        callers each get their own without a lock)."""
        try:
            return self._free.pop()
        except IndexError:
            return np.empty(self.arena_bytes + ALIGN, dtype=np.uint8)

    def take_arena(self) -> tuple[np.ndarray, int]:
        """A free arena and its 64-byte aligned address."""
        raw = self.take_raw()
        addr = raw.ctypes.data
        return raw, addr + (-addr % ALIGN)

    def give_arena(self, raw: np.ndarray) -> None:
        """Return an arena for the next call (a few are kept, for concurrent callers)."""
        if len(self._free) < 4:
            self._free.append(raw)


def _up(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def split(extent: int, work: int, align: int, threads: int, least: int | None = None) -> int:
    """How many chunks a kernel of ``extent`` outer rows (in units of ``align``) and ``work``
    element-steps is cut into: 1 below ``least`` (default SPLIT_WORK), else CHUNKS_PER_THREAD
    per thread."""
    n = min(threads, extent // max(align, 1))
    if n <= 1 or work < (SPLIT_WORK if least is None else least):
        return 1
    return min(n * CHUNKS_PER_THREAD, extent // align)


class _Arena:
    """First-fit placement of buffers with live ranges [first, last] (step indices)."""

    def __init__(self) -> None:
        self.placed: list[tuple[int, int, int, int]] = []  # offset, size, first, last
        self.size = 0

    def place(self, nbytes: int, first: int, last: int) -> int:
        size = _up(max(nbytes, 1))
        busy = sorted((o, s) for o, s, f, la in self.placed if not (la < first or f > last))
        at = 0
        for o, s in busy:
            if at + size <= o:
                break
            at = max(at, o + s)
        self.placed.append((at, size, first, last))
        self.size = max(self.size, at + size)
        return at


def layout(plan: Plan, inst: Instance, addrs: list[tuple[int, int]], threads: int,
           target: Target) -> Layout:
    """The runner's table for ``inst``: ``addrs`` holds each step's kernel (and pack) address;
    ``target`` is the one the kernels were compiled for (it decides matmul tiles)."""
    nparams = sum(b.kind == "param" for b in plan.buffers)
    result_slot: dict[int, int] = {}
    for pid in plan.results:
        result_slot.setdefault(pid, nparams + len(result_slot))
    arena_slot = nparams + len(result_slot)
    for pid in plan.results:  # a result that is a reshape: its base is the result's storage
        if plan.buffers[pid].kind == "view":
            base = plan.buffers[pid].base
            assert base is not None and plan.buffers[base].kind == "result"
            result_slot[base] = result_slot[pid]
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for s, st in enumerate(plan.steps):
        for i in st.buffers:
            root = plan.root(i)
            first.setdefault(root, s)
            last[root] = s
    arena = _Arena()
    table: list[tuple[int, int]] = []
    for i, (b, shape) in enumerate(zip(plan.buffers, inst.shapes, strict=True)):
        if b.kind == "param":
            assert b.param is not None
            table.append((b.param, 0))
        elif b.kind == "result":
            table.append((result_slot[i], 0))
        elif b.kind == "const":
            assert b.data is not None
            table.append((-1, b.data.ctypes.data))
        elif b.kind == "view":
            assert b.base is not None
            table.append(table[b.base])
        else:
            nbytes = int(np.prod(shape)) * b.dtype.np_dtype.itemsize
            used = i in first
            off = arena.place(nbytes, first[i], last[i]) if used else 0
            table.append((arena_slot, off))
    records: list[list[int]] = []
    arglists: list[list[int]] = []
    kept: list[np.ndarray] = []  # arrays the table points into
    for s, (st, si, (fn, pack)) in enumerate(zip(plan.steps, inst.steps, addrs, strict=True)):
        rec = [0] * STEP_WORDS
        args = list(st.buffers)
        rec[FN], rec[SIZES], rec[EXTENT] = fn, si.sizes.ctypes.data, si.extent
        rec[SCRATCH_ARG] = -1
        if isinstance(st.kernel, MatmulKernel):
            assert si.matmul is not None
            batch, m, kk, n = si.matmul
            mr, nr, _ = tile_shape(st.kernel.buffers[0].dtype, target)
            item = packed_item(st.kernel)
            npan = -(-n // nr)
            packed, panels = packed_b(st.kernel, batch, kk, n, target)
            # the compute function's rows run through the batches, then the groups of panels
            # (matmul.py); the group count follows the kernel's sizes
            groups = panel_groups(st.kernel, batch * m, kk, npan, nr, threads)
            every_n = n + sum(static_n(sib.n) for sib in st.kernel.siblings)
            rows = split(groups * batch * m, batch * m * kk * every_n, mr, threads)
            if rows == 1:
                groups = 1
            sizes = np.array([*si.sizes[:len(st.kernel.sizes)], groups], dtype=np.int64)
            kept.append(sizes)
            rec[SIZES] = sizes.ctypes.data
            # each worker's packed block of A (a token size where tiles read A in place) and
            # a row pass's block of product rows
            per_worker: int | None = worker_scratch(st.kernel, kk, n, target)[0]
            args.append(len(table))
            table.append((arena_slot, arena.place(packed, s, s)))
            # the pack function's panels run through the batches too (packing.emit_pack_all)
            rec[KIND], rec[PACK_FN], rec[PANELS] = MATMUL, pack, panels
            rec[PACK_CHUNKS] = split(panels, packed // item, 1, threads, SPLIT_PACK)
            rec[NCHUNKS], rec[ALIGN_ROWS], rec[EXTENT] = rows, mr, groups * batch * m
        else:
            align = chunk_columns(st.kernel)
            rec[NCHUNKS], rec[ALIGN_ROWS] = split(si.extent, si.work, align, threads), align
            # each worker's column accumulators (none: no scratch argument)
            per_worker = column_scratch(st.kernel) or None
        if per_worker is not None:  # the last argument: worker w's part starts w * per_worker in
            args.append(len(table))
            workers = min(threads, max(rec[NCHUNKS], 1))
            table.append((arena_slot, arena.place(per_worker * workers, s, s)))
            rec[SCRATCH_ARG], rec[SCRATCH_BYTES] = len(args) - 1, per_worker
        rec[NARGS] = len(args)
        records.append(rec)
        arglists.append(args)
    nb, ns = len(table), len(records)
    bt = HEADER
    stt = bt + 2 * nb
    words = [nb, ns, bt, stt, *[w for e in table for w in e]]
    words += [0] * (STEP_WORDS * ns)
    at = len(words)
    for s, args in enumerate(arglists):
        records[s][ARGS] = at
        words[stt + STEP_WORDS * s: stt + STEP_WORDS * (s + 1)] = records[s]
        words += args
        at += len(args)
    prog = np.array(words, dtype=np.int64)
    return Layout(prog, arena.size, arena_slot + 1, kept)

