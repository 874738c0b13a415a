"""Virtual environments built from a fixture's pins, for `odelint confirm --with-old-pins`.

Installing old jax wheels takes a minute, so each environment is kept under
~/.cache/odelint/venvs/<hash of the pins and the Python version> and reused. A folder is
used only once it is complete (it is built under a temporary name, then renamed).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable

from odelint.files.user_cache import user_cache_dir

READY = ".odelint-ready"


class VenvError(RuntimeError):
    """The environment could not be created or its pins could not be installed."""


def cache_root() -> str:
    return os.path.join(user_cache_dir(), "venvs")


def key(requirements: str, base_python: str = sys.executable) -> str:
    version = subprocess.run([base_python, "-c", "import sys; print(sys.version)"], capture_output=True,
                             text=True, check=True).stdout
    return hashlib.sha256(f"{version}\0{requirements}".encode()).hexdigest()[:16]


def python_of(folder: str) -> str:
    return os.path.join(folder, "Scripts", "python.exe") if os.name == "nt" else os.path.join(folder, "bin", "python")


def ensure(requirements_path: str, *, base_python: str = sys.executable, root: str | None = None,
           log: Callable[[str], None] = print, timeout: float = 1800) -> str:
    """The Python of an environment with these pins installed, created on first use."""
    with open(requirements_path, encoding="utf-8") as handle:
        requirements = handle.read()
    folder = os.path.join(root or cache_root(), key(requirements, base_python))
    if os.path.exists(os.path.join(folder, READY)):
        return python_of(folder)
    building = f"{folder}.building-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    log(f"creating {folder} from {requirements_path}")
    try:
        _run([base_python, "-m", "venv", building], timeout)
        _run([python_of(building), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
              os.path.abspath(requirements_path)], timeout)
        with open(os.path.join(building, READY), "w", encoding="utf-8") as handle:
            handle.write(requirements)
        try:
            os.rename(building, folder)
        except OSError:
            if not os.path.exists(os.path.join(folder, READY)):  # not a concurrent run's finished copy
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return python_of(folder)


def _run(command: list[str], timeout: float) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise VenvError(f"`{' '.join(command)}` took more than {timeout:.0f} s") from error
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise VenvError(f"`{' '.join(command)}` failed:\n{tail}")
