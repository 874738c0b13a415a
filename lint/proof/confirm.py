"""Prove the rules: run each rule's fixture programs under JAX; the hazard must fail, the fix must work."""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import threading
import time

from odelint.api.errors import UsageError
from odelint.api.registry import all_rules, rule_for
from odelint.api.rule import TextRule
from odelint.engine.core import fix_source, lint_source
from odelint.proof import confirmations, venvs
from odelint.proof.fixtures import Case, FixtureError, Run, judge_fixed, judge_hazard, judge_references, load_cases

# Runs a fixture program as `python -c BOOTSTRAP program.py` (in any environment, odelint
# need not be installed there) and reports, on the last line of stderr, the uncaught
# exception (its class name and those of its bases, message), the library versions and JAX's backend.
BOOTSTRAP = r"""
import json, os, runpy, sys, traceback
from importlib import metadata
program = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(program))
def report(raised):
    versions = {}
    for name in ("jax", "jaxlib", "equinox", "diffrax", "optax"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    backend = None
    if "jax" in sys.modules:
        try:
            backend = sys.modules["jax"].default_backend()
        except Exception:
            pass
    sys.stdout.flush()
    info = {"raised": raised, "versions": versions, "backend": backend}
    sys.stderr.write("\nODELINT-RUN " + json.dumps(info) + "\n")
try:
    runpy.run_path(program, run_name="__main__")
except SystemExit:
    report(None)
    raise
except BaseException as error:
    traceback.print_exc()
    kind = type(error)
    names = [cls.__name__ for cls in kind.__mro__]
    report({"type": kind.__name__, "names": names, "message": str(error)})
    sys.exit(1)
else:
    report(None)
"""

# What `--device` sets JAX_PLATFORMS to (auto: leave it as it is). The GPU setting keeps the
# CPU backend listed after CUDA: host callbacks (io_callback, pure_callback) place their inputs
# on a CPU device and fail on a CUDA-only JAX ("failed to find a local CPU device").
PLATFORMS = {"cpu": "cpu", "gpu": "cuda,cpu", "auto": None}
PROBE = ("import json, jax; print(json.dumps({'backend': jax.default_backend(), "
         "'devices': [str(d) for d in jax.devices()]}))")
PROBE_TIMEOUT = 180


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rule", action="append", default=[], metavar="CODE",
                        help="only these rules (repeatable, or comma-separated); default: every rule with fixtures")
    parser.add_argument("--device", choices=sorted(PLATFORMS), default="auto",
                        help="JAX backend for the programs (gpu fails when none is visible; default: auto)")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="programs run side by side (default: 1)")
    parser.add_argument("--with-old-pins", action="store_true",
                        help="also run version-pin fixtures in cached virtual environments built from their pins")
    parser.add_argument("--record", action="store_true",
                        help="write rules/data/confirmations.json and tests/fixtures/CONFIRMED.md")
    parser.add_argument("--root", help="a source checkout whose tests/fixtures to run (default: the fixtures "
                                       "installed with odelint)")


@dataclasses.dataclass
class Outcome:
    """One fixture case: the lint check, then the hazard and fixed programs."""

    case: Case
    flagged: bool = False
    lint_detail: str = ""
    fix_exact: bool = True            # `fixed` is byte-for-byte the --fix output (fix = safe/unsafe)
    fixed_clean: bool = True          # the rule neither flags `fixed` nor crashes on either program
    hazard_ok: bool = False
    hazard_detail: str = "not run"
    fixed_ok: bool = False
    fixed_detail: str = "not run"
    runs: dict = dataclasses.field(default_factory=dict)   # "hazard"/"fixed" -> Run
    skipped: str | None = None

    @property
    def confirmed(self) -> bool:
        return self.flagged and self.fixed_clean and self.hazard_ok and self.fixed_ok and self.fix_exact

    @property
    def seconds(self) -> float:
        return sum(run.seconds for run in self.runs.values())

    def versions(self, role: str = "hazard") -> dict:
        run = self.runs.get(role)
        return run.versions if run is not None else {}

    @property
    def backend(self) -> str:
        backends = {run.backend for run in self.runs.values() if run.backend}
        return "/".join(sorted(backends)) or "-"


def run(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    fixtures = fixtures_folder(args.root)
    chosen = _chosen_rules(args.rule, fixtures)
    outcomes = _load(chosen, fixtures)
    env = dict(os.environ)
    platforms = PLATFORMS[args.device]
    if platforms:
        env["JAX_PLATFORMS"] = platforms
    probe = _probe(env, args.device)
    log = _Progress()
    log.say(f"odelint confirm: {len(outcomes)} case(s) of {len(chosen)} rule(s) on {probe['backend']} "
            f"({', '.join(probe['devices'])}), {args.jobs} job(s)")
    started = time.perf_counter()
    for outcome in outcomes:
        _lint(outcome, chosen[outcome.case.code])
    tasks = _programs(outcomes, args.with_old_pins, log)
    log.total = len(tasks)
    _run_all(tasks, env, args.jobs, log)
    for outcome in outcomes:
        _judge(outcome)
    elapsed = time.perf_counter() - started
    if args.format == "json":
        print(json.dumps(as_json(outcomes, probe, elapsed), indent=2))
    else:
        print(table(outcomes), end="")
        print(summary(outcomes, elapsed, probe["backend"]))
    if args.record:
        _record(outcomes, fixtures)
    by_rule = _by_rule(outcomes)
    return 1 if any(verdict(cases) == "NO" for cases in by_rule.values()) else 0


def fixtures_folder(root: str | None = None) -> str:
    """The folder of `<CODE>/` fixture folders: `<root>/tests/fixtures` when a root is given, else
    the fixtures shipped with this odelint (package data `odelint/fixtures`; `tests/fixtures` beside
    `lint/` in a source checkout), so `confirm` proves the installed rules from any folder."""
    if root:
        return os.path.join(os.path.abspath(root), "tests", "fixtures")
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for candidate in (os.path.join(package, "fixtures"), os.path.join(os.path.dirname(package), "tests", "fixtures")):
        if os.path.isdir(candidate):
            return candidate
    raise UsageError(f"no fixtures were installed with odelint (looked in {package}); pass --root")


def rule_folder(fixtures: str, rule) -> str:
    """A rule's fixture folder: its `fixtures` attribute names it (`tests/fixtures/<CODE>`)."""
    return os.path.join(fixtures, os.path.basename(rule.fixtures.rstrip("/")))


def all_rules_with_fixtures(fixtures: str) -> list:
    return [rule for rule in all_rules() if rule.fixtures and os.path.isdir(rule_folder(fixtures, rule))]


def _chosen_rules(selected: list[str], fixtures: str) -> dict:
    if not selected:
        rules = all_rules_with_fixtures(fixtures)
        if not rules:
            raise UsageError(f"no rule has fixtures under {fixtures}; pass --root")
        return {rule.code: rule for rule in rules}
    chosen = {}
    for value in ",".join(selected).split(","):
        if not value.strip():
            continue
        rule = rule_for(value.strip())
        if rule is None:
            raise UsageError(f"unknown rule {value.strip()!r}")
        if not rule.fixtures or not os.path.isdir(rule_folder(fixtures, rule)):
            raise UsageError(f"{rule.code} has no fixtures under {fixtures}")
        chosen[rule.code] = rule
    return chosen


def _load(chosen: dict, fixtures: str) -> list[Outcome]:
    outcomes = []
    for code, rule in chosen.items():
        try:
            outcomes += [Outcome(case) for case in load_cases(rule_folder(fixtures, rule), code)]
        except FixtureError as error:
            raise UsageError(str(error)) from error
    return outcomes


def _probe(env: dict, device: str) -> dict:
    """Which backend and devices JAX sees with this environment; fails clearly without JAX or a GPU."""
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired as error:
        raise UsageError(f"importing jax took more than {PROBE_TIMEOUT} s") from error
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        if device == "gpu":
            raise UsageError(f"--device gpu: JAX sees no GPU (with JAX_PLATFORMS={PLATFORMS['gpu']} "
                             f"it failed with {last}); "
                             "it needs an NVIDIA GPU and jax with CUDA, e.g. pip install 'jax[cuda12]'")
        raise UsageError(f"cannot run jax with {sys.executable} "
                         f"(install jax, equinox, diffrax and optax: odelint's `jax` extra): {last}")
    info = json.loads(done.stdout.strip().splitlines()[-1])
    if device == "gpu" and info["backend"] != "gpu":
        raise UsageError(f"--device gpu: JAX sees no GPU, only {', '.join(info['devices'])}")
    return info


def _lint(outcome: Outcome, rule) -> None:
    """In-process, with the installed odelint: is the hazard flagged, and is `fixed` the --fix output?

    For a rule over requirement files, the linted pair is pins_hazard / pins_fixed."""
    case = outcome.case
    target, twin = (case.hazard, case.fixed)
    if issubclass(rule, TextRule) and case.pins_hazard is not None and case.pins_fixed is not None:
        target, twin = case.pins_hazard, case.pins_fixed
    source = _read(case.path(target))
    linted = lint_source(source, case.path(target), {case.code})
    outcome.flagged = not linted.crashes and any(f.code == case.code for f in linted.findings)
    outcome.lint_detail = f"{target} flagged" if outcome.flagged else f"{target} is not flagged with {case.code}"
    if linted.crashes:
        outcome.lint_detail = f"{case.code} crashed on {target}: {linted.crashes[0].error}"
    twin_linted = lint_source(_read(case.path(twin)), case.path(twin), {case.code})
    if twin_linted.crashes:
        outcome.fixed_clean = False
        outcome.lint_detail += f"; {case.code} crashed on {twin}: {twin_linted.crashes[0].error}"
    elif any(f.code == case.code for f in twin_linted.findings):
        outcome.fixed_clean = False
        outcome.lint_detail += f"; {twin} is still flagged with {case.code}"
    if case.fix in ("safe", "unsafe"):
        fixed = fix_source(source, case.path(target), {case.code}, unsafe=case.fix == "unsafe").source
        outcome.fix_exact = fixed == _read(case.path(twin))
        if not outcome.fix_exact:
            outcome.lint_detail += f"; {twin} is not what `odelint check --fix` makes of {target}"


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _programs(outcomes: list[Outcome], with_pins: bool, log) -> list[tuple]:
    """(outcome, role, python, program) for every program to run; builds pin environments first."""
    tasks = []
    for outcome in outcomes:
        case = outcome.case
        pythons = {"hazard": sys.executable, "fixed": sys.executable}
        if case.pins_hazard is not None and case.pins_fixed is not None:  # case.needs_pins (they go together)
            if not with_pins:
                outcome.skipped = "version-pin fixture: run with --with-old-pins"
                continue
            try:
                pythons = {role: venvs.ensure(case.path(pins), log=log.say)
                           for role, pins in (("hazard", case.pins_hazard), ("fixed", case.pins_fixed))}
            except (venvs.VenvError, OSError) as error:
                raise UsageError(f"{case.code} {case.name}: {error}") from error
        tasks += [(outcome, role, pythons[role], case.path(getattr(case, role))) for role in ("hazard", "fixed")]
    return tasks


class _Progress:
    """Lines on stderr as programs start and end, with a running count."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.total = 0
        self.started = 0
        self.done = 0

    def say(self, text: str) -> None:
        with self.lock:
            print(text, file=sys.stderr, flush=True)

    def start(self, label: str) -> None:
        with self.lock:
            self.started += 1
            print(f"[{self.started}/{self.total}] start {label}", file=sys.stderr, flush=True)

    def end(self, label: str, run) -> None:
        with self.lock:
            self.done += 1
            print(f"[{self.done}/{self.total}] done  {label}: {run.outcome()} ({run.seconds:.1f} s)",
                  file=sys.stderr, flush=True)


def _run_all(tasks: list[tuple], env: dict, jobs: int, log: _Progress) -> None:
    def one(task: tuple) -> None:
        outcome, role, python, program = task
        label = f"{outcome.case.code} {outcome.case.name} {role}"
        log.start(label)
        outcome.runs[role] = run_program(python, program, env, outcome.case.timeout)
        log.end(label, outcome.runs[role])

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in [pool.submit(one, task) for task in tasks]:
            future.result()


def run_program(python: str, program: str, env: dict, timeout: float):
    """One fixture program in its own process, killed after `timeout` seconds."""
    started = time.perf_counter()
    try:
        done = subprocess.run([python, "-c", BOOTSTRAP, program], env=env, capture_output=True, text=True,
                              timeout=timeout, cwd=os.path.dirname(os.path.abspath(program)))
    except subprocess.TimeoutExpired as error:
        return Run(None, _text(error.stdout), _text(error.stderr), time.perf_counter() - started)
    return Run.from_process(done.returncode, done.stdout, done.stderr, time.perf_counter() - started)


def _text(data) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")


def _judge(outcome: Outcome) -> None:
    if "hazard" in outcome.runs:
        outcome.hazard_ok, outcome.hazard_detail = judge_hazard(outcome.case, outcome.runs["hazard"])
    if "fixed" in outcome.runs:
        outcome.fixed_ok, outcome.fixed_detail = judge_fixed(outcome.runs["fixed"])
    if outcome.hazard_ok and outcome.fixed_ok:
        agree, detail = judge_references(outcome.case, outcome.runs["hazard"], outcome.runs["fixed"])
        if not agree:
            outcome.hazard_ok, outcome.hazard_detail = False, detail


def _by_rule(outcomes: list[Outcome]) -> dict[str, list[Outcome]]:
    grouped: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.case.code, []).append(outcome)
    return grouped


def verdict(cases: list[Outcome]) -> str:
    """A rule is confirmed when every case that ran is; skipped when none could run."""
    ran = [case for case in cases if not case.skipped]
    if not ran:
        return "skipped"
    return "yes" if all(case.confirmed for case in ran) else "NO"


def _versions(outcome: Outcome) -> str:
    hazard = confirmations.versions_text(outcome.versions("hazard"))
    fixed = confirmations.versions_text(outcome.versions("fixed"))
    return hazard if hazard == fixed else f"{hazard} -> {fixed}"


def table(outcomes: list[Outcome]) -> str:
    """The text table, one row per case, then what went wrong where something did."""
    header = ("rule", "case", "flagged", "hazard reproduced", "fix verified", "seconds", "backend", "versions")
    rows = []
    for outcome in outcomes:
        if outcome.skipped:
            rows.append((outcome.case.code, outcome.case.name, "-", "skipped", "skipped", "-", "-", "-"))
            continue
        rows.append((outcome.case.code, outcome.case.name, _yes(outcome.flagged and outcome.fixed_clean),
                     _yes(outcome.hazard_ok),
                     _yes(outcome.fixed_ok and outcome.fix_exact), f"{outcome.seconds:.1f}", outcome.backend,
                     _versions(outcome)))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
             for row in [header, *rows]]
    notes = []
    for outcome in outcomes:
        where = f"{outcome.case.code} {outcome.case.name}"
        if outcome.skipped:
            notes.append(f"{where}: skipped: {outcome.skipped}")
        elif not outcome.confirmed:
            notes += [f"{where}: lint: {outcome.lint_detail}", f"{where}: hazard: {outcome.hazard_detail}",
                      f"{where}: fixed: {outcome.fixed_detail}"]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def _yes(value: bool) -> str:
    return "yes" if value else "NO"


def summary(outcomes: list[Outcome], seconds: float, backend: str) -> str:
    verdicts = [verdict(cases) for cases in _by_rule(outcomes).values()]
    ran = [v for v in verdicts if v != "skipped"]
    text = f"{ran.count('yes')} of {len(ran)} rule(s) confirmed on {backend} in {seconds:.1f} s"
    skipped = verdicts.count("skipped")
    return text + (f"; {skipped} skipped (version pins: --with-old-pins)" if skipped else "")


def as_json(outcomes: list[Outcome], probe: dict, seconds: float) -> dict:
    rules = []
    for code, cases in _by_rule(outcomes).items():
        rules.append({"code": code, "confirmed": verdict(cases), "cases": [{
            "name": o.case.name, "flagged": o.flagged, "fixed_clean": o.fixed_clean, "lint": o.lint_detail,
            "hazard_reproduced": o.hazard_ok, "hazard": o.hazard_detail,
            "fix_verified": o.fixed_ok and o.fix_exact, "fixed": o.fixed_detail, "seconds": round(o.seconds, 2),
            "backend": o.backend, "versions": {role: o.versions(role) for role in o.runs}, "skipped": o.skipped,
        } for o in cases]})
    return {"backend": probe["backend"], "devices": probe["devices"], "seconds": round(seconds, 2), "rules": rules}


def _record(outcomes: list[Outcome], fixtures: str) -> None:
    today = datetime.date.today().isoformat()
    update = {}
    for code, cases in _by_rule(outcomes).items():
        ran = [o for o in cases if not o.skipped]
        if not ran:
            continue
        update[code] = {
            "date": today, "confirmed": verdict(cases) == "yes", "backend": ran[0].backend,
            "versions": ran[0].versions(), "cases": [_recorded_case(o) for o in ran],
        }
    data = confirmations.merged(confirmations.load(), update)
    confirmations.write(data, confirmations.path(), os.path.join(fixtures, "CONFIRMED.md"))


def _recorded_case(outcome: Outcome) -> dict:
    entry = {"name": outcome.case.name, "hazard": outcome.hazard_detail, "fixed": outcome.fixed_detail,
             "seconds": round(outcome.seconds, 1), "versions": outcome.versions("hazard")}
    if outcome.versions("fixed") != outcome.versions("hazard"):
        entry["fixed_versions"] = outcome.versions("fixed")
    return entry
