"""Tests written for mutants that survived tests/mutation/mutate.py: each names the fault it catches."""

from __future__ import annotations

import json
import os
import time
from importlib import metadata
from pathlib import Path

import libcst as cst
import pytest
from odelint.analysis import project
from odelint.api.finding import Finding, Span
from odelint.api.registry import known_codes, rule_for
from odelint.engine import noqa, runner
from odelint.engine.core import lint_source
from odelint.engine.positions import StatementPositions, _ast_statements, _innermost
from odelint.faces import cli
from odelint.faces.report import sarif
from odelint.files import cache
from odelint.files.config import ConfigResolver, Overrides
from test_confirm import _fake_repo, fake_jax  # noqa: F401 - the fixture is used by name

HAZARD = ("import equinox as eqx\nimport optax\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
          "state = optax.adam(1e-3).init(model)")


def test_add_noqa_merges_codes_into_the_existing_directive_once() -> None:
    """Fault: the old comment kept and a second one appended (noqa.add_noqa's slice)."""
    source = HAZARD + "  # noqa: E501\n"
    added = noqa.add_noqa(source, lint_source(source, "m.py").findings)
    assert added.splitlines()[-1] == "state = optax.adam(1e-3).init(model)  # noqa: E501, ODL201"


def test_syntax_newer_than_the_running_python_is_left_to_libcst() -> None:
    """Fault: every `ast` rejection taken as final, so `type X = ...` (3.12) hides real findings."""
    found = lint_source("type Vector = list[float]\n" + HAZARD + "\n", "m.py").findings
    assert [(f.code, f.span.line) for f in found] == [("ODL201", 5)]


def test_top_level_statements_are_placed_by_ast_lines() -> None:
    """Fault: the fast path (each statement positioned alone) silently replaced by the slow one."""
    source = "import a; import b\n\nx = 1\n\n\ndef f():\n    pass\n"
    statements = _ast_statements(cst.parse_module(source), source)
    assert statements is not None and [statement.lineno for statement in statements] == [1, 3, 6]


def test_the_cache_folder_ignores_itself_in_git(tmp_path: Path) -> None:
    """Fault: the cache folder's .gitignore not written."""
    (tmp_path / "train.py").write_text(HAZARD + "\n", encoding="utf-8")
    resolver = ConfigResolver(Overrides(), known_codes(), cwd=str(tmp_path))
    runner.run([str(tmp_path)], resolver, runner.Options(jobs=1, use_cache=True))
    (ignore,) = tmp_path.rglob(".gitignore")
    assert ignore.read_text(encoding="utf-8").splitlines()[-1] == "*"


def _sarif(findings: list[Finding], errors: list[tuple[str, str]] | None = None) -> dict:
    return json.loads(sarif.render(findings, errors=errors or []))["runs"][0]


def test_sarif_paths_notebook_cells_and_failed_runs() -> None:
    """Faults: a `./` prefix cut wrongly, cells not located, a failed read reported as success."""
    cell = Finding("ODL201", "optimizer-init-unfiltered", "m", Span(3, 5, 3, 9), "./nb/train.ipynb", cell=2)
    plain = Finding("ODL201", "optimizer-init-unfiltered", "m", Span(1, 1, 1, 2), "./pkg/train.py")
    run = _sarif([cell, plain])
    with_cell, without = run["results"]
    assert with_cell["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "nb/train.ipynb"
    assert with_cell["locations"][0]["logicalLocations"][0]["name"] == "cell 2"
    assert with_cell["properties"] == {"cell": 2}
    assert without["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/train.py"
    assert "logicalLocations" not in without["locations"][0] and "properties" not in without
    assert run["invocations"][0]["executionSuccessful"] is True
    failed = _sarif([], [("bad.py", "cannot read: Permission denied")])["invocations"][0]
    assert failed["executionSuccessful"] is False
    assert failed["toolExecutionNotifications"][0]["message"]["text"] == "bad.py: cannot read: Permission denied"


def test_confirm_reports_the_library_versions_each_program_ran_with(tmp_path: Path, fake_jax: None,  # noqa: F811
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Fault: the versions of a program that ran dropped from the report."""
    installed = {}
    for name in ("jax", "jaxlib", "equinox", "diffrax", "optax"):
        try:
            installed[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    if not installed:
        pytest.skip("no library of the JAX stack is installed: every program reports no versions")
    root = _fake_repo(tmp_path)
    cli.main(["confirm", "--root", root, "--rule", "ODL204", "--format", "json"])
    (case,) = json.loads(capsys.readouterr().out)["rules"][0]["cases"]
    assert case["versions"] == {"hazard": installed, "fixed": installed}


def test_ODL704_a_key_consumed_once_inside_a_loop_is_reused_on_the_next_iteration() -> None:
    """Fault: the pre-check counting only keys consumed twice in the body, dropping loop reuse."""
    source = ("import jax.random as jr\n\ndef noisy(key, x, n):\n    out = []\n    for _ in range(n):\n"
              "        out.append(x + jr.normal(key, ()))\n    return out\n")
    assert [(f.code, f.span.line) for f in lint_source(source, "m.py", {"ODL704"}).findings] == [("ODL704", 6)]


def test_ODL704_the_key_keyword_is_found_among_other_keywords() -> None:
    """Fault: the pre-check taking any name-valued keyword (`shape=n`) for the key."""
    source = ("import jax.random as jr\n\ndef draw(k, n, m):\n    a = jr.normal(shape=n, key=k)\n"
              "    b = jr.uniform(key=k, shape=m)\n    return a, b\n")
    assert [f.code for f in lint_source(source, "m.py", {"ODL704"}).findings] == ["ODL704"]


# a finding as the cache stores it (every field the cache checks before it trusts an entry)
STORED = {"code": "ODL201", "name": "optimizer-init-unfiltered", "message": "m", "line": 1, "column": 1,
          "end_line": 1, "end_column": 2, "fixable": False, "fix_safety": None, "fix_description": None,
          "cell": None}


def _stored_cache(folder: Path) -> cache.Cache:
    store = cache.Cache(str(folder), project.stamp)
    store.put("k", ["ODL201"], ["ODL201"], [{**STORED, "path": "t.py"}])
    store.save()
    return cache.Cache(str(folder), project.stamp)


def test_a_warm_cache_read_within_a_day_does_not_rewrite_the_file(tmp_path: Path) -> None:
    """Faults: a cache marked changed when only read, or an entry's last use refreshed on every read."""
    store = _stored_cache(tmp_path)
    before = Path(store.file).stat().st_mtime_ns
    assert store.get("k", ["ODL201"]) == [STORED]
    os.utime(store.file, ns=(before - 10**9, before - 10**9))
    store.save()
    assert Path(store.file).stat().st_mtime_ns == before - 10**9, "a read-only run rewrote the cache"


def test_a_cache_entry_unused_for_more_than_a_day_is_stamped_again(tmp_path: Path) -> None:
    """Fault: the daily refresh of an entry's last use inverted (old entries evicted first though used)."""
    written = _stored_cache(tmp_path)
    stored = json.loads(Path(written.file).read_text(encoding="utf-8"))
    stored["entries"]["k"]["used"] = int(time.time()) - 2 * cache.REFRESH_SECONDS
    Path(written.file).write_text(json.dumps(stored), encoding="utf-8")
    store = cache.Cache(str(tmp_path), project.stamp)
    assert store.get("k", ["ODL201"]) is not None
    store.save()
    stamped = json.loads(Path(store.file).read_text(encoding="utf-8"))["entries"]["k"]["used"]
    assert abs(stamped - time.time()) < 60


def test_a_cache_entry_with_damaged_dependencies_is_a_miss(tmp_path: Path) -> None:
    """Fault: an entry whose `depends` is not one of the stored groups trusted (issue 22:
    validate, treat as a miss)."""
    for damage in (["model.py"], 7, -1, True):
        store = _stored_cache(tmp_path)
        store._entries["k"]["depends"] = damage
        assert store.get("k", ["ODL201"]) is None, damage


def test_a_full_cache_keeps_the_most_recently_used_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Faults: the cache never trimmed, or trimmed of its newest entries."""
    monkeypatch.setattr(cache, "MAX_ENTRIES", 2)
    store = cache.Cache(str(tmp_path), project.stamp)
    for name in ("old", "newer", "newest"):
        store.put(name, ["ODL201"], ["ODL201"], [])
    for age, name in enumerate(("newest", "newer", "old")):
        store._entries[name]["used"] = int(time.time()) - age
    store.save()
    assert sorted(json.loads(Path(store.file).read_text(encoding="utf-8"))["entries"]) == ["newer", "newest"]


def test_an_entry_no_run_used_for_a_week_is_dropped_when_the_cache_is_written(tmp_path: Path) -> None:
    """Fault: entries of files' old contents kept for ever, for every warm run to read."""
    store = cache.Cache(str(tmp_path), project.stamp)
    now = int(time.time())
    for name, used in (("today", now), ("six days", now - 6 * 24 * 3600), ("eight days", now - 8 * 24 * 3600)):
        store.put(name, ["ODL201"], ["ODL201"], [], {f"/p/{name}.py": [1, 2]})
        store._entries[name]["used"] = used
    store.save()
    stored = json.loads(Path(store.file).read_text(encoding="utf-8"))
    assert sorted(stored["entries"]) == ["six days", "today"]
    assert sorted(path for path, _ in stored["paths"]) == ["/p/six days.py", "/p/today.py"]


def test_cache_clean_removes_the_folder_and_says_whether_there_was_one(tmp_path: Path) -> None:
    """Faults: `odelint clean` removing nothing, or claiming a cache that was not there."""
    _stored_cache(tmp_path / "cache")
    assert cache.clean(str(tmp_path / "cache")) is True and not (tmp_path / "cache").exists()
    assert cache.clean(str(tmp_path / "cache")) is False


def test_sarif_rule_descriptors_say_whether_the_rule_fixes() -> None:
    """Fault: every rule described as fixable."""
    findings = [Finding("ODL201", "optimizer-init-unfiltered", "m", Span(1, 1, 1, 2), "a.py"),
                Finding("ODL704", "prng-key-reuse", "m", Span(1, 1, 1, 2), "a.py")]
    descriptors = _sarif(findings)["tool"]["driver"]["rules"]
    assert [(d["id"], d["properties"]["fixable"]) for d in descriptors] == [("ODL201", True), ("ODL704", False)]


def test_a_nul_byte_is_a_syntax_error_at_the_start_of_the_file() -> None:
    """A NUL byte is reported at 1:1 (CPython 3.11.4+ raises SyntaxError for it, older ones ValueError)."""
    found = lint_source(HAZARD + "\0\n", "m.py").findings
    assert [(f.code, f.span.line, f.span.column) for f in found] == [("ODL000", 1, 1)]


def test_a_rule_crash_names_the_rules_own_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault: the crash report naming the engine's frame instead of the rule's."""
    def finish(self: object) -> None:
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(rule_for("ODL201"), "finish", finish)
    (crash,) = lint_source(HAZARD + "\n", "m.py", {"ODL201"}).crashes
    line = finish.__code__.co_firstlineno + 1
    assert crash.error == f"RuntimeError: broken on purpose at test_mutation_survivors.py:{line}"


def test_an_editors_positions_forget_the_statements_an_edit_replaced() -> None:
    """Fault: the editor's cache keeping replaced statements (it grows with every edit) and
    dropping the current ones (recomputed on every keystroke)."""
    positions = StatementPositions()
    before = cst.parse_module("x = 1\ny = 2\n")
    for statement in before.body:
        positions.relative(before, statement)
    after = before.with_changes(body=(before.body[0], cst.parse_statement("y = 3\n")))
    positions.keep_only(after)
    assert list(positions._ranges) == [id(before.body[0])]


def test_positions_descend_into_the_innermost_function_body() -> None:
    """Fault: the walk never entering a function body, so a finding there is rendered with the
    whole top-level statement."""
    function = cst.parse_statement("def f():\n    x = 1\n    return y\n")
    assert isinstance(function, cst.FunctionDef) and isinstance(function.body, cst.IndentedBlock)
    returned = function.body.body[1]
    assert isinstance(returned, cst.SimpleStatementLine) and isinstance(returned.body[0], cst.Return)
    name = returned.body[0].value
    assert name is not None
    assert _innermost(function, {id(name)}) == {id(name): [(function, 1)]}


def test_ODL201_init_with_star_arguments_is_skipped_without_a_crash() -> None:
    """Fault: the guard letting `optim.init(*trees)` (positions unknowable) through to the checks."""
    result = lint_source(HAZARD.replace(".init(model)", ".init(*[model])") + "\n", "m.py", {"ODL201"})
    assert (result.crashes, result.findings) == ([], [])


def _key_reuses(source: str) -> list[tuple[str, str | None]]:
    from odelint.analysis.facts import Facts, model_node_types
    from odelint.analysis.keys import KeyUses
    from odelint.analysis.scopes import build_scope_index

    facts = Facts(build_scope_index(cst.parse_module(source), model_node_types()), "train.py")
    return [(reuse.name, reuse.deliberate) for reuse in KeyUses(facts).reuses]


def test_a_key_drawn_in_an_assignment_targets_subscript_is_consumed() -> None:
    """Fault: `_target_reads` passes a subscript target's value on as if it were starred,
    so the draw in `ys[...]` is never seen."""
    source = ("import jax\n\ndef f(key, ys):\n"
              "    ys[jax.random.randint(key, (), 0, 3)] = jax.random.normal(key)\n    return ys\n")
    assert _key_reuses(source) == [("key", None)]


def test_an_inner_loops_fresh_split_makes_the_outer_loops_fixed_key_deliberate() -> None:
    """Fault: a fresh split in an inner loop is not passed on to the loop around it, so a
    key kept fixed beside it (plots comparable across training) reads as a bug."""
    source = ("import jax\n\ndef plots(key, fixed, steps, show):\n    for step in range(steps):\n"
              "        for _ in range(2):\n            key, sub = jax.random.split(key)\n"
              "        show(jax.random.normal(fixed, (3,)))\n")
    assert _key_reuses(source) == [("fixed", "a fixed key beside a key split afresh on every iteration")]


def test_any_file_under_tests_is_a_test_file() -> None:
    """Fault: a file counts as a test only under both `tests/` and `test/`."""
    assert project.is_test_file(os.path.join("proj", "tests", "helpers.py"))
    assert project.is_test_file(os.path.join("proj", "test", "helpers.py"))
    assert not project.is_test_file(os.path.join("proj", "src", "helpers.py"))


def test_the_relative_dots_alone_name_no_module_file(tmp_path: Path) -> None:
    """Fault: `from . import x` looks the package itself up as `<package>/__init__.py` (the
    model looks its names up one by one, `.x`, and never the package alone)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import equinox\n")
    imports = project.ImportsOf(str(tmp_path / "pkg" / "train.py"))
    assert imports.file(".") is None
    (tmp_path / "pkg" / "model.py").write_text("")
    assert imports.file(".model") == str(tmp_path / "pkg" / "model.py")
