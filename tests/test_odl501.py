"""ODL501: every dependency-file format, the "can only resolve to" reasoning, and the table."""

from __future__ import annotations

import pytest
from odelint.analysis import known_bad
from odelint.api import dependency_files
from odelint.api.finding import Span
from odelint.engine.core import lint_source
from odelint.faces import cli
from packaging.specifiers import SpecifierSet
from packaging.version import Version

CODE = "ODL501"


def findings(text: str, filename: str):
    result = lint_source(text, filename, {CODE})
    assert result.crashes == []
    return [f for f in result.findings if f.code == CODE]


def spans(text: str, filename: str) -> list[Span]:
    return [f.span for f in findings(text, filename)]


# --- every format: the exact place of the finding -------------------------------------------

def test_requirements_points_at_the_blamed_requirement() -> None:
    text = "# pins\njax==0.4.33\njaxlib==0.4.33\n  equinox==0.11.6   # old\ndiffrax==0.6.0\n"
    (finding,) = findings(text, "requirements.txt")
    assert finding.span == Span(4, 3, 4, 18)
    assert finding.message.startswith("`equinox==0.11.6` with jax==0.4.33 can only install a known-bad combination")
    assert "use equinox>=0.11.7" in finding.message and "patrick-kidger/diffrax#502" in finding.message


def test_requirements_options_hashes_extras_continuations_and_case() -> None:
    text = ("-i https://example.org/simple\n-r base.txt\n--hash=sha256:00\n"
            "JAX[cuda12]==0.4.33 \\\n    --hash=sha256:abc\n"
            "Equinox==0.11.6 --hash=sha256:def\n./local/package\n")
    assert spans(text, "requirements-dev.txt") == [Span(6, 1, 6, 16)]


def test_constraints_file() -> None:
    assert spans("equinox<0.11.7\njax==0.4.34\n", "constraints.txt") == [Span(1, 1, 1, 15)] * 2


def test_pyproject_dependencies_extras_and_groups() -> None:
    text = ('[project]\nname = "m"\ndependencies = [\n    "jax>=0.4.36",\n]\n\n'
            "[project.optional-dependencies]\node = ['diffrax<0.6.1']\n\n"
            '[dependency-groups]\ndev = ["pytest", {include-group = "ode"}]\n')
    assert spans(text, "pyproject.toml") == [Span(8, 9, 8, 22)]


def test_pyproject_same_string_twice_is_reported_where_it_is_written() -> None:
    text = ('[tool.other]\nnames = ["notes"]\n[project]\nname = "m"\ndependencies = ["equinox==0.11.6"]\n'
            '[project.optional-dependencies]\nold = ["jax==0.4.33", "equinox==0.11.6"]\n')
    assert spans(text, "pyproject.toml") == [Span(5, 18, 5, 33)]


def test_setup_cfg_install_requires_and_extras() -> None:
    text = ("[metadata]\nname = m\n\n[options]\ninstall_requires =\n    numpy\n    jaxlib==0.4.34\n"
            "    jax==0.4.34  # pinned\n\n[options.extras_require]\nfit = equinox==0.11.7\n")
    (finding,) = findings(text, "setup.cfg")
    assert finding.span == Span(11, 7, 11, 22)
    assert "Custom JVP rule must produce primal and tangent outputs" in finding.message


def test_environment_yml_conda_specs_and_pip_list() -> None:
    text = ("name: ode\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n"
            "  - conda-forge::jax==0.4.33=pyhd8ed1ab_0\n  - pip\n  - pip:\n      - optax\n"
            '      - "equinox<0.11.7"\nvariables:\n  equinox: 0.11.8\n')
    assert spans(text, "environment.yml") == [Span(10, 10, 10, 24)]


def test_environment_conda_fuzzy_version_and_top_level_items() -> None:
    # `jax=0.4.3` means 0.4.3.*: no bad version there; `jax 0.4.33` means 0.4.33.*
    assert spans("dependencies:\n- jax=0.4.3\n- equinox=0.11.6\n", "environment.yaml") == []
    assert spans("dependencies:\n- jax 0.4.33\n- equinox=0.11.6\n", "environment.yaml") == [Span(3, 3, 3, 17)]


# --- "can only resolve to": flagged only when no good version is possible ----------------------

@pytest.mark.parametrize("jax, equinox", [
    ("jax==0.4.33", "equinox>=0.11.6"),      # 0.11.7 is possible
    ("jax>=0.4.31,<0.4.34", "equinox==0.11.6"),  # 0.4.31 is possible
    ("jax~=0.4.30", "equinox==0.11.6"),
    ("jax", "equinox==0.11.6"),              # jax unconstrained
    ("jax==0.4.33", "equinox"),
    ("jaxlib==0.4.33", "equinox==0.11.6"),   # the table speaks of jax, not jaxlib
    ("jax==0.4.33", "equinox==0.11.6,!=0.11.6"),  # nothing resolves at all
])
def test_not_flagged_when_a_good_resolution_exists(jax: str, equinox: str) -> None:
    assert findings(f"{jax}\n{equinox}\n", "requirements.txt") == []


@pytest.mark.parametrize("jax, equinox", [
    ("jax==0.4.32", "equinox==0.11.6"),       # a yanked release pinned exactly
    ("jax>=0.4.32,<0.4.34", "equinox<0.11.7"),
    ("jax>=0.4.32,<0.4.34", "equinox>=0.11,<0.11.7,!=0.11.3"),
    ("jax>=0.5", "equinox==0.10.*"),          # every later JAX, whatever comes next
    ("jax===0.4.33", "equinox==0.11.6"),
])
def test_flagged_when_every_resolution_is_bad(jax: str, equinox: str) -> None:
    assert [f.span.line for f in findings(f"{jax}\n{equinox}\n", "requirements.txt")][:1] == [2]


def test_constraints_of_one_package_on_several_lines_are_intersected() -> None:
    assert spans("jax>=0.4.30\njax<0.4.34\njax>0.4.31\nequinox==0.11.6\n", "requirements.txt") == [Span(4, 1, 4, 16)]
    # the blamed package's line is the first that constrains it
    assert spans("jax==0.7.0\nequinox\n", "requirements.txt") == [Span(1, 1, 1, 11)]
    assert spans("jax\nequinox\njax==0.7.0\n", "requirements.txt") == [Span(3, 1, 3, 11)]


def test_markers_and_urls_are_not_known_versions() -> None:
    assert findings('jax==0.4.33; python_version >= "3.10"\nequinox==0.11.6\n', "requirements.txt") == []
    assert findings("jax==0.4.33\nequinox @ git+https://github.com/patrick-kidger/equinox\n",
                    "requirements.txt") == []


# --- noqa ------------------------------------------------------------------------------------

@pytest.mark.parametrize("filename, text", [
    ("requirements.txt", "jax==0.4.33\nequinox==0.11.6  # noqa: ODL501\n"),
    ("requirements.txt", "jax==0.4.33\nequinox==0.11.6  # noqa\n"),
    ("pyproject.toml", '[project]\ndependencies = [\n  "jax==0.4.33",\n  "equinox==0.11.6",  # noqa: ODL501\n]\n'),
    ("setup.cfg", "[options]\ninstall_requires =\n  jax==0.4.33\n  equinox==0.11.6  # noqa: ODL501\n"),
    ("environment.yml", "dependencies:\n  - jax=0.4.33\n  - equinox=0.11.6  # noqa: ODL501\n"),
])
def test_noqa_on_the_reported_line(filename: str, text: str) -> None:
    assert findings(text, filename) == []
    assert len(findings(text.replace("noqa", "note"), filename)) == 1


def test_noqa_for_another_code_does_not_hide_it() -> None:
    assert len(findings("jax==0.4.33\nequinox==0.11.6  # noqa: ODL201\n", "requirements.txt")) == 1


# --- malformed files: nothing, and no crash ---------------------------------------------------

@pytest.mark.parametrize("filename, text", [
    ("pyproject.toml", '[project\ndependencies = ["jax==0.4.33", "equinox==0.11.6"]\n'),
    ("pyproject.toml", '[project]\ndependencies = "jax==0.4.33"\noptional-dependencies = 3\n'),
    ("pyproject.toml", 'project = 1\n'),
    ("setup.cfg", "install_requires = jax==0.4.33\n[options]\n[options]\n"),
    ("setup.cfg", "[options]\ninstall_requires = file: requirements.txt\n"),
    ("requirements.txt", "jax===\n==0.4.33\nequinox==0.11.6 ;;\n\\\n[x]\n\x00\x01\n"),
    ("requirements.txt", "jax==0.4.33 \\"),
    ("environment.yml", "dependencies:\n  - jax=>0.4.33\n  - equinox=\n  - ::\n  - pip:\n    - [\n  -\n"),
    ("environment.yml", "{not: yaml, at: all}\n"),
    ("pyproject.toml", ""),
])
def test_malformed_files_give_no_finding_and_no_crash(filename: str, text: str) -> None:
    assert findings(text, filename) == []


def test_reader_positions_do_not_depend_on_the_parser() -> None:
    declared = dependency_files.read("setup.cfg", "[options]\ninstall_requires =\n    jax\n    jaxlib\n")
    assert [(d.name, d.span.line, d.span.column) for d in declared] == [("jax", 3, 5), ("jaxlib", 4, 5)]
    declared = dependency_files.read("setup.cfg", "[options]\ninstall_requires =\n    jaxlib\n    jax\n")
    assert [(d.name, d.span.line) for d in declared] == [("jaxlib", 3), ("jax", 4)]


# --- the table ---------------------------------------------------------------------------------

def test_table_loads_and_is_consistent() -> None:
    table = known_bad.load()
    assert len(table.combinations) >= 10
    assert len({c.id for c in table.combinations}) == len(table.combinations)
    for combination in table.combinations:
        assert len(combination.when) >= 2 and combination.blame in combination.when
        assert combination.symptom and combination.issues and combination.fix
        for name, bad in combination.when.items():
            if not bad:
                continue
            releases = table.releases[name]
            assert list(releases) == sorted(releases), name
            # "newer than listed" stands for one version only while no bound lies above the list
            assert all(Version(s.version) <= releases[-1] for s in bad), (combination.id, name)


def test_allowed_uses_releases_named_versions_and_newer() -> None:
    table = known_bad.load()
    assert table.allowed("jax", SpecifierSet(">=0.4.31,<0.4.34")) == {Version("0.4.31"), Version("0.4.33")}
    assert table.allowed("jax", SpecifierSet("==0.4.32")) == {Version("0.4.32")}
    assert Version("9999") in table.allowed("equinox", SpecifierSet(">=0.13"))


def test_cli_check_finds_dependency_files_in_a_folder(tmp_path, capsys) -> None:
    (tmp_path / "requirements.txt").write_text("jax==0.4.33\nequinox==0.11.6\n")
    (tmp_path / "requirements-good.txt").write_text("jax==0.4.33\nequinox==0.11.7\n")
    (tmp_path / "notes.txt").write_text("jax==0.4.33\nequinox==0.11.6\n")
    code = cli.main(["check", "--no-cache", "--select", CODE, "-q", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert out.count("ODL501") == 1 and "requirements.txt:2:1: ODL501" in out
