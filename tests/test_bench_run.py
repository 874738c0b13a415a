"""bench/run.py: which corpora it times, and under which names."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

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
