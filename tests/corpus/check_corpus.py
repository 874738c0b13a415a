"""Lint a corpus of real JAX-ecosystem code and check what `--fix --unsafe-fixes` does to it.

    python tests/corpus/check_corpus.py /tmp/corpus [--seed-files 200] [--work DIR] [--json OUT]

1. `odelint check` over the corpus, every rule on: the findings, and internal errors (must be 0).
2. The fix-run over a copy: every changed file still `compile()`s, a second `--fix` changes
   nothing, files without findings stay byte-identical, and the changed files are exactly
   the files that had fixable findings.
3. The same fix-run over a seeded copy of a corpus slice: every rule's Flag examples are
   appended to each file (their global names made unique), so thousands of fixes are made
   on real files; the findings per rule are compared with what the examples promise.

Everything runs through the CLI (`python -m odelint check ...`) in subprocesses; the corpus
itself is never written. Exit status 0 when every check holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import mutate  # the script's folder is on sys.path

FIXED_LINE = re.compile(r"^Fixed (\d+) findings?:$", re.M)
FIXED_FILE = re.compile(r"^- .+:$", re.M)


def odelint(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "odelint", "check", "--no-cache", "--isolated", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def lint(root: str) -> dict:
    """Findings (JSON dicts) and the error lines odelint printed."""
    done = odelint("--format", "json", "--exit-zero", root)
    errors = [line for line in done.stderr.splitlines() if line.startswith("odelint: error:")]
    if done.returncode not in (0, 2) or (done.returncode == 2 and not errors):
        raise SystemExit(f"odelint check failed ({done.returncode}):\n{done.stderr}")
    return {"findings": json.loads(done.stdout or "[]"),
            "internal_errors": [line for line in errors if "internal error" in line],
            "other_errors": [line for line in errors if "internal error" not in line]}


def fix(root: str) -> tuple[int, int, list[str]]:
    """(fixes applied, files changed, error lines) of `--fix --unsafe-fixes`."""
    done = odelint("--fix", "--unsafe-fixes", "--show-fixes", "--exit-zero", "--quiet", root)
    match = FIXED_LINE.search(done.stdout)
    applied, files = (int(match.group(1)), len(FIXED_FILE.findall(done.stdout))) if match else (0, 0)
    return applied, files, [line for line in done.stderr.splitlines() if line.startswith("odelint: error:")]


def snapshot(root: str) -> dict[str, bytes]:
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                files[os.path.relpath(path, root)] = handle.read()
    return files


def compiles(data: bytes, path: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, path, "exec", dont_inherit=True)
            return True
        except (SyntaxError, ValueError):
            return False


def fix_run(root: str) -> dict:
    """The fix-run checks on a writable tree `root`."""
    before = snapshot(root)
    linted = lint(root)
    with_findings = {os.path.relpath(f["path"], root) for f in linted["findings"]}
    fixable = {os.path.relpath(f["path"], root) for f in linted["findings"] if f["fixable"]}
    applied, files_reported, errors = fix(root)
    after = snapshot(root)
    changed = {path for path in before if after.get(path) != before[path]}
    not_compiling = sorted(p for p in changed if p.endswith((".py", ".pyi")) and not compiles(after[p], p))
    applied_again, _, errors_again = fix(root)
    again = snapshot(root)
    remaining = lint(root)
    return {
        "files": len(before),
        "findings_before": len(linted["findings"]),
        "fixable_before": sum(f["fixable"] for f in linted["findings"]),
        "files_with_findings": len(with_findings),
        "files_with_fixable_findings": len(fixable),
        "fixes_applied": applied,
        "files_changed": len(changed),
        "files_changed_reported": files_reported,
        "changed_not_fixable": sorted(changed - fixable),
        "fixable_not_changed": sorted(fixable - changed),
        "changed_without_findings": sorted(changed - with_findings),
        "changed_not_compiling": not_compiling,
        "second_fix_applied": applied_again,
        "second_fix_changed": sorted(p for p in after if again.get(p) != after[p]),
        "findings_after": len(remaining["findings"]),
        "fixable_after": sum(f["fixable"] for f in remaining["findings"]),
        "findings_after_by_rule": dict(collections.Counter(f["code"] for f in remaining["findings"])),
        "internal_errors": linted["internal_errors"] + remaining["internal_errors"] + [
            line for line in errors + errors_again if "internal error" in line],
    }


def snippets() -> list[tuple[str, str, int]]:
    """(rule code, source, findings promised) for every Flag example of a Python rule."""
    from odelint.api.registry import all_rules
    from odelint.api.rule import Flag, Rule

    return [(rule.code, example.code, example.count) for rule in all_rules() if issubclass(rule, Rule)
            for example in rule.examples if isinstance(example, Flag) and example.filename.endswith(".py")]


def seed(corpus: str, target: str, count: int) -> tuple[int, collections.Counter]:
    """Copy `count` compiling corpus files (evenly spread) into `target`, each followed by
    every Flag example under names of its own; returns (files, findings promised per rule)."""
    candidates = []
    for folder, _, names in os.walk(corpus):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if name.endswith(".py") and os.path.getsize(path) < 200_000:
                candidates.append(path)
    candidates.sort()
    renamed = []
    for index, (code, source, promised) in enumerate(snippets()):
        mapping = mutate.unique_mapping(source, lambda name, i=index: f"{name}_seed{i}", shadowed=True)
        renamed.append((code, mutate.rename(source, mapping), promised))
    step = max(1, len(candidates) // count)
    chosen = 0
    expected: collections.Counter = collections.Counter()
    for path in candidates[::step]:
        if chosen == count:
            break
        with open(path, "rb") as handle:
            data = handle.read()
        if not compiles(data, path):
            continue
        text = data.decode("utf-8")
        appended = "".join(f"\n\n# --- seeded hazard: {code} ---\n{source}" for code, source, _ in renamed)
        destination = os.path.join(target, os.path.relpath(path, corpus))
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        with open(destination, "w", encoding="utf-8", newline="") as handle:
            handle.write(text.rstrip("\n") + "\n" + appended)
        chosen += 1
        for code, _, promised in renamed:
            expected[code] += promised
    return chosen, expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--seed-files", type=int, default=200, help="files in the seeded slice (0: skip)")
    parser.add_argument("--work", help="where to put the copies (default: a temporary folder, removed after)")
    parser.add_argument("--json", help="also write the summary as JSON here")
    args = parser.parse_args(argv)
    work = args.work or tempfile.mkdtemp(prefix="odelint-corpus-")
    summary: dict = {}
    try:
        linted = lint(args.corpus)
        summary["lint"] = {
            "findings": len(linted["findings"]),
            "by_rule": dict(collections.Counter(f["code"] for f in linted["findings"])),
            "list": [f"{os.path.relpath(f['path'], args.corpus)}:{f['line']}:{f['column']} {f['code']} {f['message']}"
                     for f in linted["findings"]],
            "internal_errors": linted["internal_errors"],
            "other_errors": linted["other_errors"],
        }
        copy = os.path.join(work, "copy")
        shutil.copytree(args.corpus, copy)
        summary["fix_run"] = fix_run(copy)
        if args.seed_files:
            seeded = os.path.join(work, "seeded")
            files, expected = seed(args.corpus, seeded, args.seed_files)
            seeded_lint = lint(seeded)
            found = collections.Counter(f["code"] for f in seeded_lint["findings"])
            summary["seeded"] = {
                "files": files,
                "snippets_per_file": len(snippets()),
                "findings_expected_by_rule": dict(sorted(expected.items())),
                "findings_by_rule": dict(sorted(found.items())),
                **fix_run(seeded),
            }
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    report(summary)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=2)
    return 0 if ok(summary) else 1


def ok(summary: dict) -> bool:
    runs = [summary["fix_run"], *([summary["seeded"]] if "seeded" in summary else [])]
    return not summary["lint"]["internal_errors"] and all(
        not run[key] for run in runs for key in ("changed_not_fixable", "fixable_not_changed",
                                                 "changed_without_findings", "changed_not_compiling",
                                                 "second_fix_changed", "internal_errors")
    ) and all(run["second_fix_applied"] == 0 and run["fixable_after"] == 0 for run in runs)


def report(summary: dict) -> None:
    lint_part = summary["lint"]
    print(f"lint: {lint_part['findings']} finding(s) {lint_part['by_rule']}, "
          f"{len(lint_part['internal_errors'])} internal error(s), {len(lint_part['other_errors'])} other error(s)")
    for line in lint_part["list"]:
        print(f"  {line[:160]}")
    for line in lint_part["internal_errors"] + lint_part["other_errors"]:
        print(f"  {line}")
    for name in ("fix_run", "seeded"):
        run = summary.get(name)
        if run is None:
            continue
        print(f"{name}:")
        for key, value in run.items():
            shown = value if not isinstance(value, list) else (len(value) if not value else value[:10])
            print(f"  {key}: {shown}")
    print("OK" if ok(summary) else "FAILED")


if __name__ == "__main__":
    sys.exit(main())
