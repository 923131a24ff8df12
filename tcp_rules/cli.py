"""The ``tcpr`` command line. User errors print diagnostics and exit 1, never a traceback."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from tcp_rules import __version__
from tcp_rules.diagnostics import Diagnostic, TcpError

# Each command imports what it needs when it runs (and each subcommand's arguments are added
# when it is chosen), so that `tcpr --help` and `tcpr check` never load egglog, llvmlite or
# hypothesis: start-up time is most of a small command's time (benchmarks/README.md, startup).
if TYPE_CHECKING:
    import numpy as np

    from tcp_rules.ir import Func
    from tcp_rules.kernels import KernelInfo
    from tcp_rules.optimize import OptOptions
    from tcp_rules.rules.library import RuleLibrary
    from tcp_rules.rules.model import Rule
    from tcp_rules.verify import Verdict


def _sizes(items: Sequence[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name.isidentifier() or not value.isdigit():
            raise TcpError.at(f"--size expects SYMBOL=INT such as N=64, got '{item}'")
        out[name] = int(value)
    return out


def _expand(paths: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for name in paths:
        p = Path(name)
        std = None if p.exists() else _standard_rule_file(name)
        if std is not None:  # 'algebra': a file of the standard library
            files.append(std)
        elif p.is_dir():
            found = sorted([*p.rglob("*.tcp"), *p.rglob("*.tcpr")])
            if not found:
                raise TcpError.at(f"{p}: no .tcp or .tcpr files in this directory")
            files.extend(found)
        else:
            files.append(p)
    return files


def _standard_rule_file(name: str) -> Path | None:
    from tcp_rules.rules.library import standard_rule_file  # loads the rule modules

    return standard_rule_file(name)


def _rule_json(lib: RuleLibrary) -> str:
    from tcp_rules.rules.printer import format_guards

    rows = []
    for r in lib.rules:
        cov = lib.coverage.get(r.name)
        rows.append({"name": r.name, "ruleset": r.ruleset, "class": r.soundness.kind,
                     "precondition": format_guards(r.soundness.precondition, " and ") or None,
                     "two_way": r.two_way, "location": r.where, "doc": r.doc or None,
                     "examples": len(r.examples),
                     "type_instances": list(cov.instances) if cov else None})
    return json.dumps({"files": [str(f) for f in lib.files], "rules": rows}, indent=2)


def check_rule_files(args: argparse.Namespace, paths: list[Path]) -> bool:
    """Check rule files together (imports and duplicate names span files); True if clean."""
    from tcp_rules.rules.library import load_rules
    from tcp_rules.rules.printer import format_rules

    if getattr(args, "prove", False):
        import tcp_rules.prove  # noqa: F401 (without z3-solver, say so before checking)
    try:
        lib = load_rules(paths)
    except TcpError as e:
        print(e.render(), file=sys.stderr)
        return False
    if args.emit == "rules":
        print(format_rules(lib.rules), end="")
    elif args.json:
        print(_rule_json(lib))
    elif not args.quiet:
        for f in lib.files:
            rules = [r for r in lib.rules if r.where.startswith(f"{f}:")]
            classes = Counter(r.soundness.kind for r in rules)
            summary = ", ".join(f"{n} {k}" for k, n in sorted(classes.items()))
            print(f"{f}: ok ({len(rules)} rules{': ' + summary if summary else ''})")
    if getattr(args, "prove", False):
        from tcp_rules.prove import prove_rules
        from tcp_rules.prove.report import format_proof

        proofs = prove_rules(lib.rules)
        for v in proofs:
            if v.status != "proved" or not args.quiet:
                print(format_proof(v))
        return not any(v.status == "refuted" for v in proofs)
    return True


def cmd_check(args: argparse.Namespace) -> int:
    from tcp_rules.pipeline import EmitStop, Emitter, load_program
    from tcp_rules.progress import Progress

    files = _expand(args.files)
    rule_files = [p for p in files if p.suffix == ".tcpr"]
    programs = [p for p in files if p.suffix != ".tcpr"]
    with Progress("tcpr check", force=None if len(files) > 1 else False) as bar:
        if rule_files:
            bar.update(f"{len(rule_files)} rule file(s)", force=True)
            with bar.above():
                failed = not check_rule_files(args, rule_files)
        else:
            failed = False
        for i, path in enumerate(programs):
            bar.update(f"{i + len(rule_files)}/{len(files)} files: {path}")
            if args.emit == "rules" or args.json:
                raise TcpError.at(f"{path}: --emit rules and --json apply to rule files (.tcpr)")
            try:
                module = load_program(path, Emitter(args.emit, write=bar.print),
                                      _dims(args.dim)).module
            except TcpError as e:
                bar.print(e.render(), file=sys.stderr)
                failed = True
                continue
            except EmitStop:
                continue
            if not args.quiet:
                names = ", ".join(f.name for f in module.funcs)
                bar.print(f"{path}: ok ({names})")
    return 1 if failed else 0


def _describe(name: str, a: np.ndarray) -> str:
    import numpy as np

    body = np.array2string(a, threshold=12, edgeitems=2, precision=5, separator=", ")
    return f"{name}: {a.dtype}{list(a.shape)} = {body}"


def _dims(items: Sequence[str]) -> dict[str, int | str]:
    out: dict[str, int | str] = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name or not (value.isdigit() or value.isidentifier()):
            raise TcpError.at(f"--dim expects NAME=SIZE or NAME=SYMBOL such as batch=8 or "
                              f"seq=S, got '{item}'")
        out[name] = int(value) if value.isdigit() else value
    return out


def cmd_import(args: argparse.Namespace) -> int:
    from tcp_rules.frontends import render_imported
    from tcp_rules.inputs import save_arrays, write_atomically
    from tcp_rules.pipeline import load_program

    imported = load_program(args.model, dims=_dims(args.dim))
    if not args.out:
        print(render_imported(imported, args.model), end="")
        return 0
    out = Path(args.out)
    weights = out.with_suffix(".weights.npz") if imported.weights else None
    if weights is not None:  # first, so that the program never names a missing file
        save_arrays(weights, imported.weights)
    text = render_imported(imported, args.model, str(weights) if weights else None)
    write_atomically(out, lambda f: f.write(text.encode()))
    print(f"wrote {out}" + (f" and {weights} ({len(imported.weights)} weights)"
                            if weights else ""))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from tcp_rules.egraph.saturate import check_schedule
    from tcp_rules.extract.cost import with_sizes
    from tcp_rules.inputs import load_inputs, random_inputs, save_results
    from tcp_rules.interpret import bind_symbols
    from tcp_rules.pipeline import (
        EmitStop,
        Emitter,
        emit_kernels,
        load_program,
        optimize_func,
        run_func,
        select_func,
    )
    from tcp_rules.progress import saturation_progress

    emit = Emitter(args.emit)
    inputs: list[np.ndarray] | None = None
    try:
        program = load_program(args.program, emit, _dims(args.dim))
        func = select_func(program.module, args.func)
        if args.inputs:
            inputs = load_inputs(args.inputs, func, given=program.weights,
                                 aliases=program.aliases)
        elif args.random:
            inputs = random_inputs(func, _sizes(args.size), seed=args.seed)
            inputs = [program.weights.get(p.param, a) for p, a in zip(func.params, inputs,
                                                                      strict=True)]
        elif args.emit is None:
            raise TcpError.at("give the inputs with --inputs IN.npz (one array per parameter) "
                              "or use --random for seeded random inputs")
        if not args.no_opt:
            lib, options = _rules(args), _opt_options(args)
            if inputs is not None:  # the cost model sizes symbolic dims as the inputs do
                options = dataclasses.replace(
                    options, cost=with_sizes(options.cost, bind_symbols(func, inputs)))
            check_schedule(lib.rules, options.schedule)
            with saturation_progress(func.name) as hook:
                result = optimize_func(func, lib.rules, options, emit, args.validate, inputs,
                                       on_iteration=hook)
            if result.validation is not None:
                print(result.validation.render(), file=sys.stderr)
            func = result.func
        else:
            emit_kernels(func, _opt_options(args), emit)
        if args.emit == "llvm":
            run_func(func, (), "compiled", emit)  # prints the IR before any input is needed
    except EmitStop:
        return 0
    assert inputs is not None
    results = run_func(func, inputs, args.engine)
    if args.out:
        save_results(args.out, results)
        print(f"wrote {len(results)} result(s) to {args.out}")
    else:
        for i, r in enumerate(results):
            print(_describe(f"result{i}", r))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from tcp_rules.demo import run_demo

    run_demo(_sizes(args.size), args.seed)
    return 0


def _opt_options(args: argparse.Namespace) -> OptOptions:
    from tcp_rules.egraph.saturate import Limits, parse_schedule
    from tcp_rules.egraph.scheduler import Backoff
    from tcp_rules.extract.cost import RooflineCost
    from tcp_rules.optimize import OptOptions
    from tcp_rules.rules.model import CLASSES

    allow = tuple(c.strip() for c in args.allow.split(",") if c.strip())
    bad = [c for c in allow if c not in CLASSES]
    if bad:
        raise TcpError.at(f"--allow: unknown class '{bad[0]}' (classes: {', '.join(CLASSES)})")
    for name, value in (("--iter-limit", args.iter_limit), ("--node-limit", args.node_limit),
                        ("--time-limit", args.time_limit), ("--match-limit", args.match_limit),
                        ("--ban-length", args.ban_length)):
        if value is not None and value <= 0:
            raise TcpError.at(f"{name} must be positive")
    if args.default_size < 1:
        raise TcpError.at("--default-size must be at least 1")
    schedule = parse_schedule(args.schedule or "")
    return OptOptions(allow=allow, extractor=args.extractor, isolate=not args.no_isolate,
                      limits=Limits(args.iter_limit, args.node_limit, args.time_limit),
                      cost=RooflineCost(default_size=args.default_size), schedule=schedule,
                      backoff=Backoff(args.match_limit, args.ban_length),
                      algebra=not args.no_algebra)


def _rules(args: argparse.Namespace) -> RuleLibrary:
    from tcp_rules.userrules import choose_rules

    return choose_rules(_expand(args.rules or []), stdlib=not args.no_stdlib,
                        verify=args.verify_rules)


def cmd_opt(args: argparse.Namespace) -> int:
    from tcp_rules.egraph.saturate import check_schedule
    from tcp_rules.pipeline import EmitStop, Emitter, load_program, optimize_func, select_func
    from tcp_rules.printer import print_func
    from tcp_rules.progress import saturation_progress

    stage = {"program": "optimized"}.get(args.emit, args.emit)
    try:
        module = load_program(args.program, Emitter(stage), _dims(args.dim)).module
    except EmitStop:
        return 0
    funcs = [select_func(module, args.func)] if args.func else list(module.funcs)
    lib, options = _rules(args), _opt_options(args)
    check_schedule(lib.rules, options.schedule)
    results = []
    for func in funcs:
        try:
            with saturation_progress(func.name) as hook:
                results.append(optimize_func(func, lib.rules, options, Emitter(stage),
                                             args.validate, on_iteration=hook))
        except EmitStop:
            continue
    if stage is not None:
        return 0
    kernels = [_kernels(r.func, options, args) for r in results]
    if args.json:
        print(json.dumps({"funcs": [{"name": r.original.name, "program": print_func(r.func),
                                     "report": r.report.to_json(),
                                     "validation": r.validation and r.validation.to_json(),
                                     "kernels": [k.to_json() for k in ks]}
                                    for r, ks in zip(results, kernels, strict=True)]},
                         indent=2))
        return 0
    for r, ks in zip(results, kernels, strict=True):
        print(print_func(r.func))
        lines = [f"optimization report for func {r.original.name}:",
                 *r.report.render().splitlines(),
                 *(r.validation.render().splitlines() if r.validation else []),
                 f"kernels: {len(ks)}"]
        for k in ks:
            est = f"{k.estimated_us:.3f} us" if k.estimated_us is not None else "-"
            meas = f", measured {k.measured_us:.3f} us" if k.measured_us is not None else ""
            lines.append(f"  {k.name}: {', '.join(k.ops)} (estimated {est}{meas})")
        print("\n".join(f"# {line}" for line in lines))
    return 0


def _kernels(func: Func, options: OptOptions, args: argparse.Namespace) -> list[KernelInfo]:
    """The kernels of an optimized func; with --run, timed on random inputs of --size."""
    from tcp_rules.extract.cost import with_sizes
    from tcp_rules.inputs import random_inputs
    from tcp_rules.interpret import bind_symbols
    from tcp_rules.kernels import kernel_infos

    if not args.run:
        return kernel_infos(func, options.cost)
    inputs = random_inputs(func, _sizes(args.size), default_size=args.default_size,
                           seed=args.seed)
    cost = with_sizes(options.cost, bind_symbols(func, inputs))
    return kernel_infos(func, cost, inputs, repeats=args.repeats)


def cmd_verify(args: argparse.Namespace) -> int:
    from tcp_rules.progress import Progress
    from tcp_rules.rules.library import load_rules
    from tcp_rules.verify import PROFILES, verify_rules
    from tcp_rules.verify.report import format_verdict, report_json

    profile = PROFILES["thorough" if args.thorough else "default"]
    if args.examples is not None:
        if args.examples < 1:
            raise TcpError.at("--examples must be at least 1")
        profile = profile.with_examples(args.examples)
    if args.prove:
        import tcp_rules.prove  # noqa: F401 (without z3-solver, say so now, not after testing)
    paths = _expand(args.files)
    start = time.perf_counter()
    rules = load_rules(paths).rules
    with Progress("tcpr verify") as bar:
        def progress(v: Verdict) -> None:
            if not args.json:
                bar.print(format_verdict(v))
            bar.step(len(rules), f"rules verified, last {v.rule.name}")

        verdicts = verify_rules(rules, profile, args.seed, progress)
    bad = [v for v in verdicts if not v.ok]
    proofs = _verify_and_prove(args, rules, verdicts) if args.prove else None
    # a refuted rule fails the run even where the tester passed it
    refuted = proofs is not None and any(p["status"] == "refuted" for p in proofs)
    if args.json:
        data = report_json(verdicts, profile.name, args.seed)
        if proofs is not None:
            data["proofs"] = proofs
        print(json.dumps(data, indent=2))
    else:
        print(f"\n{len(verdicts)} rules verified ({profile.name} profile, {profile.examples} "
              f"cases per direction, seed {args.seed}) in {time.perf_counter() - start:.1f} s: "
              f"{len(verdicts) - len(bad)} as declared, {len(bad)} worse than declared")
    return 1 if bad or refuted else 0


def cmd_prove(args: argparse.Namespace) -> int:
    from tcp_rules.progress import Progress
    from tcp_rules.prove import ProofVerdict, prove_rules
    from tcp_rules.prove.report import format_proof, report_json, summary
    from tcp_rules.rules.library import load_rules

    if args.timeout <= 0 or args.jobs < 1:
        raise TcpError.at("--timeout must be positive and --jobs at least 1")
    start = time.perf_counter()
    rules = load_rules(_expand(args.files)).rules
    with Progress("tcpr prove") as bar:
        def progress(v: ProofVerdict) -> None:
            if not args.json:
                bar.print(format_proof(v))
            bar.step(len(rules), f"rules proved or refuted, last {v.rule.name}")

        verdicts = prove_rules(rules, args.timeout, args.jobs, progress=progress)
    if args.json:
        print(json.dumps(report_json(verdicts, args.timeout), indent=2))
    else:
        print("\n" + summary(verdicts, time.perf_counter() - start))
    return 1 if any(v.status == "refuted" for v in verdicts) else 0


def _verify_and_prove(args: argparse.Namespace, rules: Sequence[Rule], tests: list[Verdict]
                      ) -> list[dict[str, Any]]:
    """``tcpr verify --prove``: prove too and print one table; the proofs as JSON."""
    from tcp_rules.prove import prove_rules
    from tcp_rules.prove.report import format_proof, proof_json, table

    proofs = prove_rules(rules, tester=False)
    for p, t in zip(proofs, tests, strict=True):
        p.tester = t
        if p.status != "proved" and not args.json:
            print(format_proof(p))
    if not args.json:
        print(table(proofs, tests))
    return [proof_json(p) for p in proofs]


def cmd_ops(args: argparse.Namespace) -> int:
    from tcp_rules.ops import OPS

    if args.json:
        rows = [{"name": op.name, "doc": op.doc, "category": op.category,
                 "operands": list(op.operands), "variadic": op.variadic,
                 "attrs": [{"name": a.name, "kind": a.kind.value,
                            "required": a.default is None and not a.optional}
                           for a in op.attrs],
                 "traits": {k: v for k, v in vars(op.traits).items() if v not in (False, None)},
                 "flops_per_element": op.cost.flops_per_element} for op in OPS.values()]
        print(json.dumps(rows, indent=2))
        return 0
    for op in OPS.values():
        operands = list(op.operands) + (["..."] if op.variadic else [])
        attrs = [f"{a.name}: {a.kind.value}" for a in op.attrs]
        print(f"{op.name}({', '.join(operands + attrs)})  {op.doc}")
    return 0


def _opt_arguments(p: argparse.ArgumentParser) -> None:
    from tcp_rules.egraph.saturate import NODES, NODES_PER_ENODE, Limits
    from tcp_rules.egraph.scheduler import Backoff
    from tcp_rules.extract.cost import RooflineCost

    p.add_argument("--rules", nargs="+", metavar="FILE",
                   help="rule files or directories, used with the standard library (files of "
                        "the standard library may be named: 'algebra')")
    p.add_argument("--no-stdlib", action="store_true",
                   help="use only the --rules files, not the standard library")
    p.add_argument("--verify-rules", action="store_true",
                   help="verify the --rules files' rules first and refuse to optimize with "
                        "one that is worse than declared (else: a warning that they are not "
                        "verified)")
    p.add_argument("--allow", default="exact,approx",
                   help="soundness classes the optimizer may use (default: exact,approx)")
    p.add_argument("--iter-limit", type=int, default=Limits.iterations,
                   help=f"iterations per phase (default {Limits.iterations})")
    p.add_argument("--node-limit", type=int, default=None,
                   help="e-nodes the e-graph may hold; a rule runs only if its matches fit "
                        f"(default: {NODES:,} or {NODES_PER_ENODE} per e-node of the loaded "
                        "program, whichever is more)")
    p.add_argument("--time-limit", type=float, default=Limits.seconds, metavar="S")
    p.add_argument("--match-limit", type=int, default=Backoff.match_limit, metavar="N",
                   help="back-off scheduler: matches a rule may apply per iteration before it "
                        f"is banned; doubles with each ban (default {Backoff.match_limit})")
    p.add_argument("--ban-length", type=int, default=Backoff.ban_length, metavar="N",
                   help="back-off scheduler: iterations a rule is banned for; doubles with "
                        f"each ban (default {Backoff.ban_length})")
    p.add_argument("--no-algebra", action="store_true",
                   help="leave the algebra tier out of the default schedule (simplify, layout "
                        "and fusion rules only)")
    p.add_argument("--extractor", choices=("tree", "dag", "ilp"), default="dag")
    p.add_argument("--schedule", metavar="PHASES",
                   help="phases split by 'then', each iterated to saturation; in a phase, "
                        "stages split by ';' run in order each iteration; rulesets in a stage "
                        "split by ',': 'layout; algebra, broadcast then fusion' (default: "
                        "simplify, explore, fusion; docs/optimizer.md)")
    p.add_argument("--default-size", type=int, default=RooflineCost.default_size, metavar="N",
                   help="the size the cost model gives symbolic dims (default 64)")
    p.add_argument("--no-isolate", action="store_true",
                   help="saturate in this process (the time limit is then checked between "
                        "rules only)")
    p.add_argument("--validate", action="store_true",
                   help="run the optimized program against the original on special and random "
                        "inputs (and on --inputs) and refuse it if it differs beyond its class")


def cmd_bench(args: argparse.Namespace) -> int:
    if args.suite == "peers":
        from tcp_rules.benchpeers import peers_suite  # needs onnx and onnxruntime: when asked

        print(peers_suite(args.threads, args.repeats, args.json, quick=args.quick,
                          names=args.cases or None, programs=args.programs,
                          save_to=args.save_programs))
        return 0
    if len(args.threads) > 1 or args.quick:
        raise TcpError.at("only --suite peers takes several thread counts or --quick")
    if (args.programs or args.save_programs) and args.suite != "models":
        raise TcpError.at("only --suite peers and --suite models take --programs or "
                          "--save-programs")
    args.threads = args.threads[0]
    if args.suite == "optimizer":
        from tcp_rules.benchsuites import optimizer_suite

        print(optimizer_suite(args.json))
        return 0
    if args.suite == "verifier":
        from tcp_rules.benchsuites import verifier_suite

        print(verifier_suite(args.json))
        return 0
    if args.suite == "prove":
        from tcp_rules.prove.bench import prove_suite  # needs z3: only when asked

        print(prove_suite(args.json, jobs=args.threads))  # --threads N: N worker processes
        return 0
    if args.suite == "cost":
        from tcp_rules.costfit import cost_suite  # imports scipy.optimize: only when asked

        print(cost_suite(args.json, args.repeats, threads=args.threads))
        return 0
    if args.suite == "jit":
        from tcp_rules.benchjit import jit_suite  # @tcp_rules.jit's first and later calls

        print(jit_suite(args.json, args.repeats, threads=args.threads))
        return 0
    if args.suite == "startup":
        from tcp_rules.benchstartup import startup_suite  # tcpr itself, in new processes

        print(startup_suite(args.json, args.repeats))
        return 0
    if args.suite == "models":
        from tcp_rules.benchmodels import models_suite  # needs onnx: only when asked

        print(models_suite(args.json, args.repeats, threads=args.threads,
                           names=args.cases or None, programs=args.programs,
                           save_to=args.save_programs))
        return 0
    if os.environ.get("OPENBLAS_NUM_THREADS") != str(args.threads):
        # OpenBLAS reads its thread count when NumPy loads; set later it runs ~30% slower
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(args.threads)}
        os.execve(sys.executable, [sys.executable, "-m", "tcp_rules", *sys.argv[1:]], env)
    from tcp_rules.codegen import run_benchmarks

    print(run_benchmarks(args.cases or None, args.repeats, args.threads, args.json))
    return 0


class _Parser(argparse.ArgumentParser):
    """Usage errors in the diagnostic style of every other error, with exit status 1.

    A subcommand's parser gets its arguments (``arguments``) only when that subcommand is
    chosen: their choices and defaults come from the modules the command runs, which the
    others, and ``tcpr --help``, need not load.
    """

    def __init__(self, *args: Any,
                 arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arguments = arguments

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        if self._arguments is not None:
            add, self._arguments = self._arguments, None
            add(self)
        return super().parse_known_args(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        hint = f"see '{self.prog} --help'"
        print(f"tcpr: {Diagnostic(message, hint=hint).render()}", file=sys.stderr)
        sys.exit(1)


def _dim_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dim", action="append", default=[], metavar="NAME=N",
                   help="for imported models: give a named dim a size (batch=8) or a TCP "
                        "symbol (seq=S)")


def _thread_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a thread count or a comma-separated list "
                                         f"of them (1,2), got {text!r}") from None
    if any(c < 1 for c in counts):
        raise argparse.ArgumentTypeError(f"thread counts must be at least 1, got {text!r}")
    return counts


def _check_arguments(p: argparse.ArgumentParser) -> None:
    from tcp_rules.pipeline import PROGRAM_STAGES

    p.add_argument("files", nargs="+", help=".tcp and .tcpr files, or directories (files of "
                   "the standard library by name: 'algebra')")
    p.add_argument("--emit", choices=(*PROGRAM_STAGES, "rules"), help="print this stage")
    p.add_argument("--json", action="store_true", help="list the rules and their classes")
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p.add_argument("--prove", action="store_true", help="prove the rules with z3 as they load")
    _dim_argument(p)
    p.set_defaults(fn=cmd_check)


def _import_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="an ONNX model or MLIR (tcp dialect) file")
    p.add_argument("-o", "--out", metavar="OUT.tcp",
                   help="write the program here, and its weights to OUT.weights.npz")
    _dim_argument(p)
    p.set_defaults(fn=cmd_import)


def _run_arguments(p: argparse.ArgumentParser) -> None:
    from tcp_rules.pipeline import ENGINES, OPT_STAGES, PROGRAM_STAGES

    p.add_argument("program")
    p.add_argument("--inputs", action="append", metavar="IN.npz",
                   help=".npz file with one array per parameter (repeat to combine files, "
                        "such as the weights `tcpr import -o` wrote)")
    _dim_argument(p)
    p.add_argument("--random", action="store_true", help="use seeded random inputs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", action="append", default=[], metavar="SYM=N",
                   help="size of a symbolic dim for --random (default 8)")
    p.add_argument("--out", help="write results to this .npz (result0, result1, ...)")
    p.add_argument("--func", help="the func to run when the program has several")
    p.add_argument("--engine", choices=ENGINES, default="compiled",
                   help="compiled kernels (default) or the NumPy reference interpreter")
    p.add_argument("--no-opt", action="store_true", help="run the program as written")
    _opt_arguments(p)
    p.add_argument("--emit", choices=(*PROGRAM_STAGES, *OPT_STAGES, "llvm"),
                   help="print this stage and stop")
    p.set_defaults(fn=cmd_run)


def _demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", action="append", default=[], metavar="SYM=N")
    p.set_defaults(fn=cmd_demo)


def _opt_command_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("program")
    p.add_argument("--func", help="optimize only this func")
    _dim_argument(p)
    _opt_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="programs, reports and kernels as JSON")
    p.add_argument("--emit", choices=("ast", "egglog", "report", "program", "mlir", "kernels"),
                   help="print this stage and stop (program: the optimized program; mlir: it "
                        "as MLIR, kernels as tcp.isolated_group; kernels: the loop nests it "
                        "compiles to)")
    p.add_argument("--run", action="store_true",
                   help="compile and time each kernel on random inputs (sizes from --size, "
                        "else --default-size)")
    p.add_argument("--size", action="append", default=[], metavar="SYM=N",
                   help="size of a symbolic dim for --run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=5, help="timed runs per kernel for --run")
    p.set_defaults(fn=cmd_opt)


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("cases", nargs="*", help="codegen cases to run (default: all)")
    p.add_argument("--suite", choices=("codegen", "optimizer", "verifier", "prove", "cost",
                                       "models", "peers", "startup", "jit"),
                   default="codegen")
    p.add_argument("--repeats", type=int, default=7, help="timed runs per engine (median)")
    p.add_argument("--threads", type=_thread_counts, default=(1,), metavar="T[,T...]",
                   help="threads for every engine (several, comma-separated: --suite peers)")
    p.add_argument("--quick", action="store_true", help="--suite peers at tiny sizes")
    p.add_argument("--save-programs", type=Path, metavar="DIR",
                   help="--suite peers or models: also write the optimized programs to DIR")
    p.add_argument("--programs", type=Path, metavar="DIR",
                   help="--suite peers or models: measure the programs --save-programs wrote "
                        "to DIR instead of optimizing (no egglog needed: optimize on one "
                        "machine, measure on another)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_bench)


def _verify_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", help=".tcpr files or directories (files of the "
                   "standard library by name: 'algebra')")
    p.add_argument("--json", action="store_true", help="verdicts as JSON (schema 1)")
    p.add_argument("--examples", type=int, help="cases per rule direction")
    p.add_argument("--seed", type=int, default=0, help="the same seed draws the same cases")
    p.add_argument("--thorough", action="store_true", help="ten times as many cases")
    p.add_argument("--prove", action="store_true",
                   help="also prove each rule with z3 (tcpr prove) and print one table")
    p.set_defaults(fn=cmd_verify)


def _prove_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", help=".tcpr files or directories (files of the "
                   "standard library by name: 'algebra')")
    p.add_argument("--json", action="store_true", help="verdicts as JSON (schema 1)")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds per solver query (default 10)")
    p.add_argument("--jobs", type=int, default=1, help="rules proved in parallel")
    p.set_defaults(fn=cmd_prove)


def _ops_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_ops)


COMMANDS: tuple[tuple[str, str, Callable[[argparse.ArgumentParser], None]], ...] = (
    ("check", "parse and check programs and rule files", _check_arguments),
    ("import", "import a model (.onnx, .mlir) as a TCP program", _import_arguments),
    ("run", "run a program on input arrays", _run_arguments),
    ("demo", "the main job on the bundled examples", _demo_arguments),
    ("opt", "optimize a program by equality saturation", _opt_command_arguments),
    ("bench", "benchmarks: compiled code against NumPy and others", _bench_arguments),
    ("verify", "check each rule's soundness class against NumPy", _verify_arguments),
    ("prove", "prove or refute each rule's soundness class with z3", _prove_arguments),
    ("ops", "list the op table", _ops_arguments),
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tcpr", description="tcp-rules: tensor rewrite rules, equality saturation and "
        "fast kernels for TCP programs (progress lines on stderr when it is a terminal; "
        "TCPR_PROGRESS=1 or 0 to force them on or off)")
    parser.add_argument("--version", action="version", version=f"tcpr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text, arguments in COMMANDS:
        sub.add_parser(name, help=help_text, arguments=arguments)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version (0) or a usage error (1)
        return e.code if isinstance(e.code, int) else int(e.code is not None)
    fn: Callable[[argparse.Namespace], int] = args.fn
    try:
        return fn(args)
    except TcpError as e:
        print(e.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug in tcp-rules, not in the user's input
        if os.environ.get("TCPR_DEBUG"):
            raise
        print(f"tcpr: internal error: {type(e).__name__}: {e}\n(this is a bug in tcp-rules; "
              f"run with TCPR_DEBUG=1 for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
