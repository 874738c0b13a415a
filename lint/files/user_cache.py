"""Where odelint keeps what outlives a project: `$ODELINT_CACHE_DIR`, else the user's cache
folder (`$XDG_CACHE_HOME/odelint`, by default `~/.cache/odelint`).

Never inside the project being linted: what is kept here includes compiled code, and a
project's files may come from anyone."""

from __future__ import annotations

import os


def user_cache_dir() -> str:
    return os.environ.get("ODELINT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "odelint")
