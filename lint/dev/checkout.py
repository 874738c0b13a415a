"""The source checkout the developer tools work on: found from the working directory, and
refused unless `odelint` is imported from it (an editable install), so that what is generated
is made from the rules being edited."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

# family folder -> the hundreds digit of its codes (README "Rule codes"; 0xx are the engine's)
FAMILIES = {
    "derivatives": "1", "optimisers": "2", "callbacks": "3", "control_flow": "4", "dependencies": "5",
    "equinox": "6", "arrays": "7", "diffrax": "8", "deprecated": "9",
}


class CheckoutError(Exception):
    """The tools cannot work here; the message says why and what to do."""


def find(start: str | os.PathLike[str] = ".") -> Path:
    """The nearest folder at or above `start` holding odelint's pyproject.toml, lint/ and rules/."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if (folder / "lint").is_dir() and (folder / "rules").is_dir() and _is_odelint(folder / "pyproject.toml"):
            return folder
    raise CheckoutError(f"{here} is not inside an odelint checkout "
                        "(no pyproject.toml of odelint with lint/ and rules/)")


def _is_odelint(pyproject: Path) -> bool:
    try:
        with pyproject.open("rb") as handle:
            return tomllib.load(handle).get("project", {}).get("name") == "odelint"
    except (OSError, tomllib.TOMLDecodeError):
        return False


def require_imported_from(root: Path) -> None:
    """Generated files are made from the imported rules: they must be this checkout's."""
    import odelint.rules as package

    imported = Path(os.path.dirname(package.__file__ or "")).resolve()
    if imported != (root / "rules").resolve():
        raise CheckoutError(f"odelint's rules are imported from {imported}, not from {root / 'rules'}: "
                            f"install this checkout in editable mode (`pip install -e '{root}[test]'`)")
