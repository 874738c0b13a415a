"""JSON output: a list of findings, each with position, code, name, and fix applicability."""

from __future__ import annotations

import json
from collections.abc import Sequence

from odelint.api.finding import Finding


def render(findings: Sequence[Finding], **_) -> str:
    return json.dumps([finding.to_dict() for finding in findings], indent=2) + "\n"
