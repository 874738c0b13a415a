"""ODL501: dependency files that can only install a known-bad JAX stack."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from odelint.analysis import known_bad
from odelint.api import dependency_files
from odelint.api.rule import Flag, Pass, TextRule

if TYPE_CHECKING:
    from odelint.api.dependency_files import Declared
    from packaging.specifiers import SpecifierSet


class IncompatibleJaxStackPins(TextRule):
    """A dependency file's constraints can only resolve to a known-bad set of versions.

    ## What it does
    Reads `requirements*.txt`, `constraints*.txt`, `pyproject.toml` (dependencies,
    optional dependencies, dependency groups), `setup.cfg` (`install_requires`,
    `extras_require`) and `environment.yml` (conda specs and the `pip:` list), and flags
    the line of the package to change when every version the file allows falls in a
    combination from odelint's table of known-bad versions (`known_bad_versions.toml`:
    JAX against Equinox, Diffrax, Optax and Optimistix). A file that still allows a good
    version is not flagged, and neither is a requirement with an environment marker or
    a URL, whose version cannot be known from the file.

    ## Why is this bad?
    These combinations install without complaint and then fail deep inside library
    internals, far from any user code. The best known: JAX 0.4.32 or later with
    Equinox older than 0.11.7 breaks every gradient through `diffrax.diffeqsolve`:

        ValueError: Closure-converted function called with different dynamic arguments
        to the example arguments provided

    (patrick-kidger/diffrax#502, #503, patrick-kidger/equinox#854, jax-ml/jax#23690; fixed
    in Equinox 0.11.7). Others: Equinox older than 0.11.8 on JAX 0.4.34 ("Custom JVP rule
    must produce primal and tangent outputs with corresponding shapes and dtypes",
    diffrax#508), diffrax older than 0.6.1 on JAX 0.4.36 (diffrax#532), JAX 0.7.0
    segfaults (equinox#1084). `odelint rule ODL501` lists nothing more: the table is the
    reference, and `odelint doctor` checks an installed environment against it.

    ## Example
    ```text
    # requirements.txt
    jax==0.4.33
    jaxlib==0.4.33
    equinox==0.11.6
    diffrax==0.6.0
    ```

    ## Use instead
    ```text
    jax==0.4.33
    jaxlib==0.4.33
    equinox==0.11.8
    diffrax==0.6.0
    ```

    ## Fix safety
    No fix: changing a pin is a decision about the whole environment. The message names
    the known-good alternative.
    """

    code = "ODL501"
    name = "incompatible-jax-stack-pins"
    summary = "Dependency constraints can only install a known-bad combination of JAX stack versions"
    # No trigger words: package names are case-insensitive (`JAX==0.4.33`), so a substring
    # gate could miss a finding, and dependency files are few and small.
    file_patterns = dependency_files.FILE_PATTERNS
    fixtures = "tests/fixtures/ODL501"

    examples = (
        Flag("""
            jax==0.4.33
            jaxlib==0.4.33
            equinox==0.11.6
            diffrax==0.6.0
            optax
        """, filename="requirements.txt",
             message="ValueError: Closure-converted function called with different dynamic arguments", span="3:1-3:16"),
        # ranges that admit only bad releases, in a constraints file
        Flag("""
            jax>=0.4.32,<0.4.33
            equinox~=0.11.0,<0.11.7
        """, filename="constraints.txt",
             message="`equinox<0.11.7,~=0.11.0` with jax<0.4.33,>=0.4.32", span="2:1-2:24"),
        Flag("""
            [project]
            name = "m"
            dependencies = ["jax==0.7.0", "equinox"]
        """, filename="pyproject.toml",
             message="segmentation faults", span="3:18-3:28"),
        Flag("""
            [options]
            install_requires =
                jax>=0.4.36
                diffrax==0.6.0
        """, filename="setup.cfg",
             message="use diffrax>=0.6.1", span="4:5-4:19"),
        Flag("""
            name: ode
            dependencies:
              - python=3.11
              - jax=0.4.34
              - pip:
                - equinox==0.11.7
        """,
             filename="environment.yml", message="`equinox==0.11.7` with jax==0.4.34.*", span="6:7-6:22"),
        # a good version is still possible, or the versions are good
        Pass("""
            jax==0.4.33
            jaxlib==0.4.33
            equinox>=0.11.6
            diffrax==0.6.0
        """, filename="requirements.txt"),
        Pass("""
            jax<=0.4.31
            equinox==0.11.6
        """, filename="requirements-old.txt"),
        Pass("""
            [project]
            name = "m"
            dependencies = ["jax>=0.4.36", "equinox>=0.11.8", "diffrax>=0.6.1"]
        """,
             filename="pyproject.toml"),
        # a marker makes the pin conditional; noqa
        Pass("""
            jax==0.4.33 ; sys_platform == "linux"
            equinox==0.11.6
        """, filename="requirements.txt"),
        Pass("""
            jax==0.4.33
            equinox==0.11.6  # noqa: ODL501
        """, filename="requirements.txt"),
    )

    def check_text(self) -> None:
        from packaging.specifiers import SpecifierSet  # as dependency_files imports it: when a file is read

        declared = dependency_files.read(os.path.basename(self.context.path), self.context.source)
        constraints: dict[str, SpecifierSet] = {}
        for requirement in declared:
            if not requirement.conditional:
                so_far = constraints.get(requirement.name, SpecifierSet())
                constraints[requirement.name] = so_far & requirement.specifier
        for combination in known_bad.load().forced(constraints):
            blamed = _line_of(declared, combination.blame)
            others = ", ".join(_spelled(name, constraints[name])
                               for name in combination.when if name != combination.blame)
            self.report_span(
                blamed.span,
                f"`{_spelled(combination.blame, constraints[combination.blame])}` with {others} can only install a "
                f"known-bad combination ({combination.id}): {combination.symptom} "
                f"[{', '.join(combination.issues)}]; use {combination.fix}",
            )


def _line_of(declared: list[Declared], name: str) -> Declared:
    """The requirement that pins the blamed package (the first with a version constraint)."""
    candidates = [d for d in declared if d.name == name and not d.conditional]
    return next((d for d in candidates if d.specifier), candidates[0])


def _spelled(name: str, constraint: SpecifierSet) -> str:
    return f"{name}{constraint}" if constraint else name
