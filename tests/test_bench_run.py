"""bench/run.py: which corpora it times, and under which names."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
assert _spec is not None and _spec.loader is not None
bench_run = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench_run  # its dataclasses look their module up
_spec.loader.exec_module(bench_run)


def test_users_code_alone_is_timed_alone_under_its_own_name(tmp_path: Path) -> None:
    assert bench_run.chosen_corpora(None, str(tmp_path)) == [("users", tmp_path.resolve())]


def test_both_corpora_are_named_by_what_they_hold(tmp_path: Path) -> None:
    libraries, users = tmp_path / "libs", tmp_path / "users"
    assert bench_run.chosen_corpora(str(libraries), str(users)) == [
        ("libraries", libraries.resolve()), ("users", users.resolve())]


def test_no_corpus_named_means_the_libraries_where_make_corpus_puts_them() -> None:
    assert bench_run.chosen_corpora(None, None) == [("libraries", Path("/tmp/corpus").resolve())]


def test_a_missing_users_corpus_is_reported_with_the_command_that_builds_it(tmp_path: Path) -> None:
    missing = tmp_path / "users"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--users", str(missing), "--no-compile",
                           "--work", str(tmp_path / "work")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"run `bash bench/make_corpus.sh --users {missing}` first" in done.stderr
    assert "/tmp/corpus" not in done.stderr  # the libraries were not asked for


def _runs(*walls: float) -> list:
    return [bench_run.Sample(wall, wall, 10.0) for wall in walls]


def test_each_round_is_its_own_ratio_so_a_slow_phase_cancels_out() -> None:
    # The machine turned 1.5x slower during round 3, between its two runs: the ratio of the
    # medians sets flake8's fast 4.0 against the plugin's slow 7.5 (1.875); by round, 1.25.
    alone = _runs(4.0, 4.0, 4.0, 6.0, 6.0)
    plugin = _runs(5.0, 5.0, 7.5, 7.5, 7.5)
    assert bench_run._median(plugin, "wall") / bench_run._median(alone, "wall") == 1.875
    assert bench_run.paired(plugin, alone) == "; by round 1.250 (1.250..1.562)"


def test_the_rounds_quartiles_show_their_spread() -> None:
    alone = _runs(4.0, 4.0, 4.0, 4.0, 4.0)
    plugin = _runs(4.4, 4.8, 5.0, 5.2, 6.0)
    assert bench_run.paired(plugin, alone) == "; by round 1.250 (1.150..1.400)"


def test_no_round_by_round_figure_from_unpaired_or_too_few_runs() -> None:
    assert bench_run.paired(_runs(5.0, 5.0, 5.0), _runs(4.0, 4.0)) == ""
    assert bench_run.paired(_runs(5.0, 5.0), _runs(4.0, 4.0)) == ""


def test_the_report_gives_both_readings_of_a_ratio() -> None:
    slices = {"base": bench_run.Slice("full", 1, ".", 10, 100), "slow": bench_run.Slice("slow", 16, ".", 1, 10)}
    results = {("flake8", 1): _runs(6.0, 6.0, 6.0, 4.0, 4.0), ("flake8-odl", 1): _runs(7.5, 7.5, 7.5, 5.0, 5.0)}
    med = {key: (bench_run._median(runs, "wall"), bench_run._median(runs, "cpu"), 10.0)
           for key, runs in results.items()}
    assert bench_run.ratios(med, slices, results) == [
        "flake8 + ODL / flake8 alone: 1.250 (1.250); by round 1.250 (1.250..1.250); target ≤ 1.3"]


def test_the_repository_case_runs_in_a_project_that_ignores_and_pins_as_projects_do(tmp_path: Path) -> None:
    corpus = tmp_path / "users"
    for relative in ("flowjax/flowjax/train.py", "flowjax/outputs/run_3/train.py", "flowjax/build/lib/flowjax.py"):
        (corpus / relative).parent.mkdir(parents=True, exist_ok=True)
        (corpus / relative).write_text("import jax\n\nleaves = jax.tree_map(abs, [1.0])\n")
    work = tmp_path / "work"
    part = bench_run.make_slice(corpus, work, 1, "full")
    case = bench_run.CASES["odelint-warm-repo"]
    folder = Path(bench_run.where(case, part, work))
    assert folder.parent == work and (folder / ".git" / "info" / "exclude").is_file()
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*.py")) == [
        "flowjax/build/lib/flowjax.py", "flowjax/flowjax/train.py", "flowjax/outputs/run_3/train.py"]
    command = bench_run.fill(case, part, SimpleNamespace(tools_venv="/nowhere"), work)
    assert "--isolated" not in command and command[-1] == "."  # its own settings, from its root
    done = subprocess.run([*command[:-3], "--format", "concise", "."], cwd=folder, capture_output=True, text=True,
                          timeout=120)
    # build/ and outputs/ are ignored by the .gitignore; the project's pins name no jax
    assert [line.split(":")[0] for line in done.stdout.splitlines() if "ODL" in line] == ["flowjax/flowjax/train.py"]
    names = (".gitignore", "pyproject.toml", ".git/info/exclude")
    written = {name: (folder / name).stat().st_mtime_ns for name in names}
    assert bench_run.where(case, part, work) == str(folder), "made once, then reused"
    assert {name: (folder / name).stat().st_mtime_ns for name in written} == written, "as a project's files, unedited"
    assert bench_run.where(bench_run.CASES["odelint-warm"], part, work) == str(work)
