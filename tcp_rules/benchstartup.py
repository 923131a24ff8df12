"""Start-up benchmark (``tcpr bench --suite startup``): the wall time of small ``tcpr``
commands, each in a fresh process, with an empty cache (cold: every run gets a new
``$TCPR_CACHE_DIR``) and with a filled one (warm: parser tables and the standard rule library
read from the cache). Python's bytecode is compiled once, into the run's temporary folder
(``$PYTHONPYCACHEPREFIX``), as an installed package has it; a source tree run with
``PYTHONDONTWRITEBYTECODE`` would compile every module on every start. Commands take turns
round by round, so that slow swings in the load of a shared machine fall on all of them alike;
the table gives medians. Benchmarks, not tests: numbers are reported, never asserted.

JSON (``--json``): a list of ``{"command", "cold_s", "warm_s", "runs"}``, seconds as medians
(``cold_s`` is null for the bare interpreter, which has no cache).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tcp_rules.resources import example_path

# A small rule file of the kind a user checks while writing it: two rules, one example.
SMALL_RULES = """\
ruleset small

# Adding -0.0 is the identity.
rule small-add-negzero: add(x, -0.0) => x
  example (x: f32[2, 3]): add(x, -0.0) => x

# Transposing twice by the same swap is the identity.
rule small-tt: transpose(transpose(x, perm=[1, 0]), perm=[1, 0]) => x
"""


def commands(small_rules: Path) -> list[tuple[str, list[str] | None]]:
    """(label, tcpr arguments) of each command timed; None: the bare interpreter."""
    softmax = str(example_path("softmax"))
    return [("python -c pass", None),
            ("tcpr --help", ["--help"]),
            ("tcpr check softmax.tcp", ["check", softmax]),
            ("tcpr check small.tcpr", ["check", str(small_rules)]),
            ("tcpr opt softmax.tcp", ["opt", softmax])]


def time_command(args: list[str] | None, cache: Path, pycache: Path | None = None) -> float:
    """Seconds one run of ``tcpr args`` takes in a new process using ``cache`` (and Python's
    bytecode in ``pycache``, when given)."""
    argv = [sys.executable, "-c", "pass"] if args is None else [
        sys.executable, "-m", "tcp_rules", *args]
    env = {**os.environ, "TCPR_CACHE_DIR": str(cache), "TCPR_PROGRESS": "0"}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): "
                           f"{done.stderr.decode(errors='replace')[-2000:]}")
    return seconds


def startup_suite(as_json: bool = False, repeats: int = 5) -> str:
    """Median wall times of each command, cold and warm, over ``repeats`` rounds."""
    with tempfile.TemporaryDirectory(prefix="tcpr-startup-") as tmp:
        small = Path(tmp) / "small.tcpr"
        small.write_text(SMALL_RULES)
        warm, pycache = Path(tmp) / "warm", Path(tmp) / "pycache"
        cmds = commands(small)
        for _, args in cmds:  # fills the warm cache, and compiles the bytecode
            time_command(args, warm, pycache)
        runs: dict[str, dict[str, list[float]]] = {c: {"cold": [], "warm": []} for c, _ in cmds}
        for i in range(repeats):
            for label, args in cmds:
                if args is not None:
                    cold = Path(tmp) / f"cold-{i}"
                    runs[label]["cold"].append(time_command(args, cold, pycache))
                    shutil.rmtree(cold, ignore_errors=True)
                runs[label]["warm"].append(time_command(args, warm, pycache))
    rows = [{"command": label,
             "cold_s": round(statistics.median(r["cold"]), 3) if r["cold"] else None,
             "warm_s": round(statistics.median(r["warm"]), 3), "runs": repeats}
            for label, r in runs.items()]
    if as_json:
        return json.dumps(rows, indent=2)
    out = [f"{'command':<26}{'cold s':>8}{'warm s':>8}   (medians of {repeats} runs, each "
           f"in a new process)"]
    for r in rows:
        first = "-" if r["cold_s"] is None else f"{r['cold_s']:.3f}"
        out.append(f"{r['command']:<26}{first:>8}{r['warm_s']:>8.3f}")
    return "\n".join(out)
