"""check the installed JAX stack against odelint's table of known-bad version combinations"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence

PACKAGES = ("jax", "jaxlib", "equinox", "diffrax", "optax", "lineax", "optimistix")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument("--path", action="append", metavar="DIR",
                        help="read installed packages from this folder (a site-packages) instead of the "
                             "running interpreter's; repeatable")


def installed_versions(path: Sequence[str] | None = None) -> dict[str, str]:
    """Versions of the JAX stack's packages, read from their metadata (nothing is imported).

    `path` lists the folders to search; None means this interpreter's `sys.path`."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    found: dict[str, str] = {}
    distributions = metadata.distributions() if path is None else metadata.distributions(path=list(path))
    for distribution in distributions:
        name = canonicalize_name(distribution.metadata["Name"] or "")
        if name in PACKAGES and name not in found:  # the first on the path is the one imported
            found[name] = distribution.version
    return {name: found[name] for name in PACKAGES if name in found}


def diagnose(versions: Mapping[str, str]) -> list[dict]:
    """The known-bad combinations these versions form, as plain data."""
    from odelint.analysis import known_bad
    from packaging.version import InvalidVersion, Version

    parsed = {}
    for name, text in versions.items():
        try:
            parsed[name] = Version(text)
        except InvalidVersion:
            continue
    return [
        {"id": combination.id, "packages": {name: versions[name] for name in combination.when},
         "symptom": combination.symptom, "issues": list(combination.issues), "fix": combination.fix}
        for combination in known_bad.load().installed(parsed)
    ]


def run(args: argparse.Namespace) -> int:
    versions = installed_versions(args.path)
    problems = diagnose(versions)
    where = ", ".join(args.path) if args.path else sys.executable
    if args.format == "json":
        print(json.dumps({"environment": where, "installed": versions, "problems": problems}, indent=2))
    else:
        print(_text(where, versions, problems), end="")
    return 1 if problems else 0


def _text(where: str, versions: Mapping[str, str], problems: list[dict]) -> str:
    lines = [f"JAX stack in {where}:"]
    lines += [f"  {name:<11} {versions.get(name, 'not installed')}" for name in PACKAGES]
    for problem in problems:
        pins = " with ".join(f"{name} {version}" for name, version in problem["packages"].items())
        lines += [
            f"error: {pins} is a known-bad combination ({problem['id']})",
            f"  symptom: {problem['symptom']}",
            f"  see: {', '.join(problem['issues'])}",
            f"  fix: {problem['fix']}",
        ]
    if problems:
        lines.append(f"Found {len(problems)} known-bad combination(s).")
    else:
        lines.append("No known-bad combination among the installed packages.")
    return "\n".join(lines) + "\n"
