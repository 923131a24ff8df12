"""Loading rule files: imports (relative, or the standard library by name), import cycles,
rulesets, duplicate names, and every static check, reported as positioned diagnostics.

Rule files are data: loading one parses text and never executes anything from it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tcp_rules.diagnostics import DiagnosticBag, Span, TcpError
from tcp_rules.grammar import ast
from tcp_rules.grammar.parser import parse_rule_file, read_source
from tcp_rules.resources import rules_dir
from tcp_rules.rules.families import expand
from tcp_rules.rules.libcache import cached_library
from tcp_rules.rules.model import Rule
from tcp_rules.rules.resolve import resolve_rule
from tcp_rules.rules.typecheck import TypeCheckResult, check_examples, check_types

TYPE_BUDGET = 10_000  # shape checks per rule direction in the type-preservation check


@dataclass(frozen=True)
class RuleLibrary:
    """Checked rules from one or more files, in load order (imports first)."""

    rules: tuple[Rule, ...]
    files: tuple[Path, ...]
    coverage: dict[str, TypeCheckResult] = field(default_factory=dict, compare=False)

    def rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def rulesets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.ruleset for r in self.rules))

    def allowing(self, classes: Iterable[str]) -> tuple[Rule, ...]:
        """The rules whose soundness class is among ``classes``."""
        allowed = set(classes)
        return tuple(r for r in self.rules if r.soundness.kind in allowed)


def standard_library_files() -> list[Path]:
    """The files of the standard rule library."""
    return sorted(rules_dir().glob("*.tcpr"))


def resolve_import(name: str, importer: Path) -> Path | None:
    """A file next to the importer (or below its folder), else a standard library file of that
    name; None if there is none.

    ImportRefused when the name reaches outside those folders: an absolute path, ``..`` out of
    the importer's folder, or a symlink that leads out (checked before looking whether the file
    exists). A rule file is data: importing must not make it a way to read, and print in a
    diagnostic, any other file on the machine.
    """
    if Path(name).is_absolute() or name.startswith("~"):
        raise ImportRefused(f"import '{name}': imports are relative to the importing file's "
                            f"folder or name a standard library file, never absolute paths")
    folder = importer.parent
    candidate = folder / name
    # resolved on both sides: the importer may itself sit behind a symlink (the standard
    # library is reached through tcp_rules/data/rules), which is fine inside its folder
    if not candidate.resolve().is_relative_to(folder.resolve()):
        raise ImportRefused(f"import '{name}' leads outside the folder of {importer.name} "
                            f"(through '..' or a symlink); imports stay in that folder or "
                            f"name a standard library file")
    return candidate if candidate.is_file() else standard_rule_file(name)


class ImportRefused(Exception):
    """An import that names a file outside the folders imports may read."""


class Loader:
    def __init__(self, bag: DiagnosticBag):
        self.bag = bag
        self.loaded: dict[Path, list[Rule]] = {}
        self.order: list[Path] = []
        self.stack: list[Path] = []

    def load(self, path: Path, via: Span | None = None) -> None:
        key = path.resolve()
        if key in self.stack:
            chain = " -> ".join(p.name for p in [*self.stack[self.stack.index(key):], key])
            self.bag.error(f"import cycle: {chain}", via)
            return
        if key in self.loaded:
            return
        try:
            decl = parse_rule_file(read_source(path))
        except TcpError as e:
            if via is not None and e.diagnostics and e.diagnostics[0].span is None:
                self.bag.error(e.diagnostics[0].message, via)
            else:
                self.bag.items.extend(e.diagnostics)
            self.loaded[key] = []
            return
        self.stack.append(key)
        rules = self.load_items(path, decl)
        self.stack.pop()
        self.loaded[key] = rules
        self.order.append(path)

    def load_items(self, path: Path, decl: ast.RuleFileDecl) -> list[Rule]:
        ruleset = path.stem
        rules: list[Rule] = []
        for item in decl.items:
            if isinstance(item, ast.ImportDecl):
                try:
                    target = resolve_import(item.path, path)
                except ImportRefused as e:
                    self.bag.error(str(e), item.span)
                    continue
                if target is None:
                    self.bag.error(f"cannot find imported file '{item.path}' (looked next to "
                                   f"{path.name} and in the standard library)", item.span)
                else:
                    self.load(target, item.span)
            elif isinstance(item, ast.RulesetDecl):
                ruleset = item.name
            else:
                for member in expand(item, self.bag):
                    rule = resolve_rule(member, ruleset, self.bag)
                    if rule is not None:
                        rules.append(rule)
        return rules

    def all_rules(self) -> list[Rule]:
        return [r for p in self.order for r in self.loaded[p.resolve()]]


def load_rules(paths: Sequence[str | Path], *, check: bool = True,
               type_budget: int = TYPE_BUDGET) -> RuleLibrary:
    """Load, resolve and check rule files (directories are searched for *.tcpr).

    Raises TcpError listing every problem found in any file.
    """
    bag = DiagnosticBag()
    loader = Loader(bag)
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.rglob("*.tcpr")) if p.is_dir() else [p])
    for f in files:
        loader.load(f)
    rules = loader.all_rules()
    seen: dict[str, Rule] = {}
    for r in rules:
        first = seen.setdefault(r.name, r)
        if first is not r:
            bag.error(f"rule {r.name} is already defined", r.span,
                      notes=[("first defined here", first.span)])
    coverage: dict[str, TypeCheckResult] = {}
    if check:
        for r in rules:
            coverage[r.name] = check_types(r, bag, type_budget)
            check_examples(r, bag)
    bag.raise_if_any("rules")
    return RuleLibrary(tuple(rules), tuple(loader.order), coverage)


def load_standard_library(check: bool = False) -> RuleLibrary:
    """The bundled standard rule library (checked by the test suite and ``tcpr check``).

    Kept in memory for the process, and on disk (rules.libcache) across processes: it is
    loaded from its files once per version of them and of the code that reads them.
    """
    files = standard_library_files()
    stamp = tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    return _load_cached(stamp, check)


@functools.lru_cache(maxsize=4)
def _load_cached(stamp: tuple[tuple[str, int, int], ...], check: bool) -> RuleLibrary:
    files = standard_library_files()
    return cached_library(files, check, TYPE_BUDGET,
                          lambda: load_rules(files, check=check, type_budget=TYPE_BUDGET))


def standard_rule_file(name: str) -> Path | None:
    """The standard library file a command-line argument names ('algebra' or 'algebra.tcpr'),
    if it names one and is not a path of its own."""
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        return None
    for candidate in (rules_dir() / name, rules_dir() / f"{name}.tcpr"):
        if candidate.suffix == ".tcpr" and candidate.is_file():
            return candidate
    return None


def load_with_standard_library(paths: Sequence[str | Path]) -> tuple[RuleLibrary, list[Rule]]:
    """The standard library plus the user's rule files (checked), and the user's own rules.

    A user rule may not take the name of a standard library rule (TcpError pointing at both):
    it would replace the rule it shadows in reports, schedules and diagnosis.
    """
    std = load_standard_library()
    user = load_rules(paths)
    std_files = {f.resolve() for f in std.files}
    mine = [r for r in user.rules  # those imported from the standard library are in std
            if r.span is None or Path(r.span.source.name).resolve() not in std_files]
    bag = DiagnosticBag()
    for r in mine:
        if any(s.name == r.name for s in std.rules):
            bag.error(f"rule {r.name} is already defined in the standard library", r.span,
                      notes=[("defined here", std.rule(r.name).span)],
                      hint="rename the rule, or run with --no-stdlib to use only your rules")
    bag.raise_if_any("rules")
    files = tuple(dict.fromkeys([*std.files, *user.files]))
    return RuleLibrary((*std.rules, *mine), files, {**std.coverage, **user.coverage}), mine
