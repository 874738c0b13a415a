"""`odelint check --show-files` and `--show-settings`: what a run would lint, and with which
settings, without linting anything (Ruff's flags of the same names)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from odelint.files.config import ConfigResolver


def files(paths: Sequence[str], resolver: ConfigResolver, stream: TextIO) -> list[tuple[str, str]]:
    """Print every file the run would lint, one a line, sorted; hand back the discovery's errors."""
    from odelint.api.registry import file_patterns
    from odelint.files.discover import discover
    from odelint.files.kinds import NOTEBOOK_SUFFIX as SUFFIX

    found = discover([path for path in paths if path != "-"], resolver, (*file_patterns(), f"*{SUFFIX}"))
    for path in sorted(target.path for target in found.targets):
        print(path, file=stream)
    return list(found.errors)


def settings(paths: Sequence[str], resolver: ConfigResolver, stream: TextIO) -> None:
    """Print the settings that govern the first Python file the run would lint (else the current folder)."""
    from odelint.api.registry import file_patterns
    from odelint.files.discover import discover
    from odelint.files.kinds import NOTEBOOK_SUFFIX as SUFFIX

    found = discover([path for path in paths if path != "-"], resolver, (*file_patterns(), f"*{SUFFIX}"))
    first = min((target.path for target in found.targets), default=resolver.cwd,
                key=lambda path: (not path.endswith((".py", ".pyi", SUFFIX)), path))  # Python before data files
    chosen = resolver.for_path(first)
    enabled = sorted(chosen.enabled(first))
    rows = [
        ("Resolved settings for", first),
        ("Settings path", chosen.path or "(none: defaults and the command line)"),
        ("project root", chosen.root),
        ("enabled rules", ", ".join(enabled) or "(none)"),
        ("disabled rules", ", ".join(code for code in chosen.codes if code not in enabled) or "(none)"),
        ("per-file-ignores", "; ".join(f"{glob}: {', '.join(codes)}" for glob, codes in chosen.per_file_ignores)
         or "(none)"),
        ("exclude", ", ".join(chosen.exclude)),
        ("include", ", ".join(chosen.include) if chosen.include is not None else "(default patterns)"),
        ("extend-include", ", ".join(chosen.extend_include) or "(none)"),
        ("unsafe-fixes", str(chosen.unsafe_fixes).lower()),
        ("respect-gitignore", str(chosen.respect_gitignore).lower()),
        ("force-exclude", str(chosen.force_exclude).lower()),
        ("target versions", ", ".join(f"{name}=={version}" if version else f"{name} (unknown)"
                                      for name, version in sorted(chosen.versions.items())) or "(none)"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name + ':':<{width + 1}} {value}", file=stream)
