"""Waiting for what another process does, without a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether `condition` came true within `seconds` (checked every 50 ms)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False
