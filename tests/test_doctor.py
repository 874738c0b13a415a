"""`odelint doctor` on fake environments: folders of `*.dist-info/METADATA`, nothing imported."""

from __future__ import annotations

import json
from pathlib import Path

from odelint.faces import cli
from odelint.proof import doctor


def fake_site(folder: Path, **versions: str) -> str:
    """A site-packages holding only metadata, as pip leaves it."""
    for name, version in versions.items():
        info = folder / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return str(folder)


def test_reads_versions_from_metadata_only(tmp_path: Path) -> None:
    site = fake_site(tmp_path, jax="0.4.33", jaxlib="0.4.33", Equinox="0.11.6", numpy="2.0.0", optimistix="0.0.7")
    expected = {"jax": "0.4.33", "jaxlib": "0.4.33", "equinox": "0.11.6", "optimistix": "0.0.7"}
    assert doctor.installed_versions([site]) == expected


def test_the_first_folder_on_the_path_wins(tmp_path: Path) -> None:
    first = fake_site(tmp_path / "a", equinox="0.11.8")
    second = fake_site(tmp_path / "b", equinox="0.11.6", jax="0.4.33")
    assert doctor.installed_versions([first, second]) == {"jax": "0.4.33", "equinox": "0.11.8"}


def test_bad_environment_exits_1_with_the_fix(tmp_path: Path, capsys) -> None:
    site = fake_site(tmp_path, jax="0.4.33", jaxlib="0.4.33", equinox="0.11.6", diffrax="0.6.0", optax="0.2.5")
    assert cli.main(["doctor", "--path", site]) == 1
    out = capsys.readouterr().out
    assert f"JAX stack in {site}:" in out
    assert "  lineax      not installed" in out
    assert "error: jax 0.4.33 with equinox 0.11.6 is a known-bad combination (closure-conversion-weak-type)" in out
    assert "ValueError: Closure-converted function called with different dynamic arguments" in out
    assert "  see: patrick-kidger/diffrax#502" in out
    assert "  fix: equinox>=0.11.7 (or jax<=0.4.31)" in out
    assert out.rstrip().endswith("Found 1 known-bad combination(s).")


def test_several_problems_and_json(tmp_path: Path, capsys) -> None:
    site = fake_site(tmp_path, jax="0.4.36", equinox="0.11.6", diffrax="0.6.0", optax="0.2.3")
    assert cli.main(["doctor", "--path", site, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["installed"] == {"jax": "0.4.36", "equinox": "0.11.6", "diffrax": "0.6.0", "optax": "0.2.3"}
    assert [p["id"] for p in report["problems"]] == [
        "closure-conversion-weak-type", "custom-jvp-float0-tangents", "optax-none-grads-weight-decay",
        "diffrax-removed-jax-internals"]
    diffrax = report["problems"][3]
    assert diffrax["packages"] == {"jax": "0.4.36", "diffrax": "0.6.0"}
    assert diffrax["fix"] == "diffrax>=0.6.1 (or jax<=0.4.35)"
    assert "patrick-kidger/diffrax#532" in diffrax["issues"] and "ConcreteArray" in diffrax["symptom"]


def test_good_environment_exits_0(tmp_path: Path, capsys) -> None:
    site = fake_site(tmp_path, jax="0.4.33", jaxlib="0.4.33", equinox="0.11.7", diffrax="0.6.0", optax="0.2.5")
    assert cli.main(["doctor", "--path", site]) == 0
    assert "No known-bad combination among the installed packages." in capsys.readouterr().out
    assert cli.main(["doctor", "--path", site, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["problems"] == []


def test_any_version_rows_need_the_package_installed(tmp_path: Path) -> None:
    assert doctor.diagnose({"jax": "0.7.0"}) == []
    assert [p["id"] for p in doctor.diagnose({"jax": "0.7.0", "equinox": "0.13.8"})] == ["jax-0.7.0-segfaults"]


def test_empty_environment_and_unreadable_versions(tmp_path: Path, capsys) -> None:
    assert cli.main(["doctor", "--path", str(tmp_path)]) == 0
    assert "  jax         not installed" in capsys.readouterr().out
    assert doctor.diagnose({"jax": "not-a-version", "equinox": "0.11.6"}) == []


def test_the_running_interpreter_by_default(capsys) -> None:
    code = cli.main(["doctor", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == (1 if report["problems"] else 0)
    assert set(report["installed"]) <= set(doctor.PACKAGES)
