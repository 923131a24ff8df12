"""A native thread pool: threads created once, work handed out without the GIL or ctypes.

``tcpr_parallel(pool, fn, ctx, n, threads)`` runs ``fn(ctx, chunk, worker)`` for every chunk in
[0, n) on the calling thread (worker 0) and up to ``threads - 1`` pool threads (workers 1..),
which take chunks from a shared atomic counter, and returns when all chunks are done. The pool's
threads are created by pthreads on first need and live as long as the process; between jobs they
watch for the next one for a few tens of microseconds (a program's kernels follow each other
closely), then sleep on a condition variable. Everything is LLVM IR text over the C library's
pthread functions, compiled by the same JIT as the kernels, so no compiler or extra package is
needed on the user's machine (Linux and macOS, x86-64 and aarch64).

One job at a time: a second caller (another Python thread calling a compiled function meanwhile)
finds the run lock taken and runs its chunks serially on its own thread, so callers never wait for
each other and never deadlock. The pool's state is a block of memory that Python allocates and
never frees (:data:`STATE_BYTES`); after ``fork`` the child starts a fresh, empty pool.
"""

from __future__ import annotations

# Byte offsets in the pool's state. The pthread objects get 256 bytes each: glibc's mutex is 40
# bytes and its condition variable 48, macOS's 64 and 48; init functions fill them in.
_MUTEX, _CV_WORK, _CV_DONE, _RUN_LOCK = 0, 256, 512, 768
_GEN, _STARTED, _NWORKERS, _JOB_FN, _JOB_CTX, _JOB_N, _PARTS, _DONE = (
    1024, 1032, 1040, 1048, 1056, 1064, 1072, 1080)
_NEXT = 1152  # the chunk counter every thread hammers: a cache line of its own
SPIN = 2000  # pause-and-look rounds (tens of microseconds) before sleeping on a condition
_WORKERS = 1280  # per worker: the state's address and the worker's number (16 bytes)
MAX_WORKERS = 255
STATE_BYTES = _WORKERS + 16 * (MAX_WORKERS + 1)


def _fields(prefix: str = "") -> str:
    """Lines naming every field's address in the state ``%p``."""
    names = {"m": _MUTEX, "cvw": _CV_WORK, "cvd": _CV_DONE, "rl": _RUN_LOCK, "genp": _GEN,
             "startedp": _STARTED, "nwp": _NWORKERS, "fnp": _JOB_FN, "ctxp": _JOB_CTX,
             "np": _JOB_N, "partsp": _PARTS, "donep": _DONE, "nextp": _NEXT}
    return "\n".join(f"  %{prefix}{n} = getelementptr i8, ptr %p, i64 {off}"
                     for n, off in names.items())


def _watch(name: str, entry: str, ptr: str, test: str, ready: str, timeout: str,
           pause: str) -> str:
    """Blocks that load the word at ``ptr`` up to SPIN times, a pause hint between looks, and
    go to ``ready`` once ``test`` (an icmp with ``{v}`` for the word) holds, else ``timeout``."""
    cond = test.format(v=f"%{name}.v")
    return f"""{name}:
  %{name}.k = phi i64 [0, %{entry}], [%{name}.k1, %{name}.next]
  %{name}.v = load atomic i64, ptr {ptr} acquire, align 8
  %{name}.ok = icmp {cond}
  br i1 %{name}.ok, label %{ready}, label %{name}.more
{name}.more:
  %{name}.left = icmp slt i64 %{name}.k, {SPIN}
  br i1 %{name}.left, label %{name}.next, label %{timeout}
{name}.next:
{pause}
  %{name}.k1 = add i64 %{name}.k, 1
  br label %{name}"""


def pool_ir(arch: str) -> str:
    """The pool's functions, ``tcpr_pool_init(state)`` and ``tcpr_parallel``, for a CPU of
    architecture ``arch`` (its spin-wait hint)."""
    pause = {"x86_64": "  call void @llvm.x86.sse2.pause()",
             "aarch64": "  call void @llvm.aarch64.hint(i32 1)"}.get(arch, "")
    decl = {"x86_64": "declare void @llvm.x86.sse2.pause()",
            "aarch64": "declare void @llvm.aarch64.hint(i32)"}.get(arch, "")
    return f"""{decl}
declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_trylock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)

define void @tcpr_pool_init(ptr %p) nounwind {{
{_fields()}
  call i32 @pthread_mutex_init(ptr %m, ptr null)
  call i32 @pthread_mutex_init(ptr %rl, ptr null)
  call i32 @pthread_cond_init(ptr %cvw, ptr null)
  call i32 @pthread_cond_init(ptr %cvd, ptr null)
  ret void
}}

; A pool thread: wait for a new job (generation), take chunks until none is left, report done.
define internal ptr @tcpr_worker(ptr %rec) nounwind {{
entry:
  %seenp = alloca i64
  %p = load ptr, ptr %rec
  %idp = getelementptr i8, ptr %rec, i64 8
  %id = load i64, ptr %idp
{_fields()}
  call i32 @pthread_mutex_lock(ptr %m)
  %g0 = load i64, ptr %genp
  store i64 %g0, ptr %seenp
  %s0 = load i64, ptr %startedp
  %s1 = add i64 %s0, 1
  store i64 %s1, ptr %startedp
  call i32 @pthread_cond_broadcast(ptr %cvd)
  br label %wait
wait:                                     ; holds the mutex
  %g = load i64, ptr %genp
  %seen = load i64, ptr %seenp
  %same = icmp eq i64 %g, %seen
  br i1 %same, label %spin.start, label %got
spin.start:                               ; a job often follows soon: watch for it a while
  call i32 @pthread_mutex_unlock(ptr %m)
  br label %spin
{_watch("spin", "spin.start", "%genp", "ne i64 {v}, %seen", "spin.end", "spin.end", pause)}
spin.end:
  call i32 @pthread_mutex_lock(ptr %m)
  %g2 = load i64, ptr %genp
  %same2 = icmp eq i64 %g2, %seen
  br i1 %same2, label %sleep, label %wait
sleep:
  call i32 @pthread_cond_wait(ptr %cvw, ptr %m)
  br label %wait
got:
  store i64 %g, ptr %seenp
  %parts = load i64, ptr %partsp
  %idle = icmp ugt i64 %id, %parts        ; not one of this job's workers
  br i1 %idle, label %wait, label %work
work:
  %fn = load ptr, ptr %fnp
  %ctx = load ptr, ptr %ctxp
  %n = load i64, ptr %np
  call i32 @pthread_mutex_unlock(ptr %m)
  br label %take
take:
  %c = atomicrmw add ptr %nextp, i64 1 seq_cst
  %more = icmp slt i64 %c, %n
  br i1 %more, label %run, label %finish
run:
  call void %fn(ptr %ctx, i64 %c, i64 %id)
  br label %take
finish:
  call i32 @pthread_mutex_lock(ptr %m)
  atomicrmw add ptr %donep, i64 1 acq_rel
  call i32 @pthread_cond_broadcast(ptr %cvd)
  br label %wait
}}

define internal void @tcpr_parallel(ptr %p, ptr %fn, ptr %ctx, i64 %n, i64 %threads) nounwind {{
entry:
  %tid = alloca i64
{_fields()}
  %few = icmp sle i64 %threads, 1
  %one = icmp sle i64 %n, 1
  %alone = or i1 %few, %one
  br i1 %alone, label %serial, label %try
try:
  %rc = call i32 @pthread_mutex_trylock(ptr %rl)
  %busy = icmp ne i32 %rc, 0
  br i1 %busy, label %serial, label %go
serial:
  %sc = phi i64 [0, %entry], [0, %try], [%sc1, %serial.body]
  %sdone = icmp sge i64 %sc, %n
  br i1 %sdone, label %out, label %serial.body
serial.body:
  call void %fn(ptr %ctx, i64 %sc, i64 0)
  %sc1 = add i64 %sc, 1
  br label %serial
go:
  %t1 = sub i64 %threads, 1
  %n1 = sub i64 %n, 1
  %w0 = call i64 @llvm.smin.i64(i64 %t1, i64 %n1)
  %want = call i64 @llvm.smin.i64(i64 %w0, i64 {MAX_WORKERS})
  call i32 @pthread_mutex_lock(ptr %m)
  br label %spawn
spawn:                                    ; create the threads this job lacks
  %nw = load i64, ptr %nwp
  %need = icmp slt i64 %nw, %want
  br i1 %need, label %create, label %started
create:
  %roff = mul i64 %nw, 16
  %roff1 = add i64 %roff, {_WORKERS}
  %rec = getelementptr i8, ptr %p, i64 %roff1
  store ptr %p, ptr %rec
  %recid = getelementptr i8, ptr %rec, i64 8
  %id = add i64 %nw, 1
  store i64 %id, ptr %recid
  %crc = call i32 @pthread_create(ptr %tid, ptr null, ptr @tcpr_worker, ptr %rec)
  %made = icmp eq i32 %crc, 0
  br i1 %made, label %created, label %started
created:
  %t = load i64, ptr %tid
  call i32 @pthread_detach(i64 %t)
  store i64 %id, ptr %nwp
  br label %spawn
started:                                  ; new threads must have read the generation
  %nw2 = load i64, ptr %nwp
  %st = load i64, ptr %startedp
  %waiting = icmp slt i64 %st, %nw2
  br i1 %waiting, label %startwait, label %publish
startwait:
  call i32 @pthread_cond_wait(ptr %cvd, ptr %m)
  br label %started
publish:
  %parts = call i64 @llvm.smin.i64(i64 %want, i64 %nw2)
  store ptr %fn, ptr %fnp
  store ptr %ctx, ptr %ctxp
  store i64 %n, ptr %np
  store i64 %parts, ptr %partsp
  store atomic i64 0, ptr %donep release, align 8
  store atomic i64 0, ptr %nextp seq_cst, align 8
  %gen = load i64, ptr %genp
  %gen1 = add i64 %gen, 1
  store atomic i64 %gen1, ptr %genp release, align 8
  call i32 @pthread_cond_broadcast(ptr %cvw)
  call i32 @pthread_mutex_unlock(ptr %m)
  br label %take
take:                                     ; the caller is worker 0
  %c = atomicrmw add ptr %nextp, i64 1 seq_cst
  %more = icmp slt i64 %c, %n
  br i1 %more, label %run, label %join
run:
  call void %fn(ptr %ctx, i64 %c, i64 0)
  br label %take
join:                                     ; the last chunks are short: watch, then sleep
  br label %join.watch
{_watch("join.watch", "join", "%donep", "sge i64 {v}, %parts", "release", "join.lock", pause)}
join.lock:
  call i32 @pthread_mutex_lock(ptr %m)
  br label %joinloop
joinloop:
  %d = load atomic i64, ptr %donep acquire, align 8
  %all = icmp sge i64 %d, %parts
  br i1 %all, label %joined, label %joinwait
joinwait:
  call i32 @pthread_cond_wait(ptr %cvd, ptr %m)
  br label %joinloop
joined:
  call i32 @pthread_mutex_unlock(ptr %m)
  br label %release
release:
  call i32 @pthread_mutex_unlock(ptr %rl)
  br label %out
out:
  ret void
}}

declare i64 @llvm.smin.i64(i64, i64)
"""


# The C library functions the pool's code calls, resolved in this process for the JIT.
PTHREAD_SYMBOLS = ("pthread_mutex_init", "pthread_mutex_lock", "pthread_mutex_trylock",
                   "pthread_mutex_unlock", "pthread_cond_init", "pthread_cond_wait",
                   "pthread_cond_broadcast", "pthread_create", "pthread_detach",
                   "clock_gettime")
