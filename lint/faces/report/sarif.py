"""SARIF 2.1.0 for code-scanning dashboards: one run, the rules that fired, their results."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from odelint import __version__
from odelint.api.docs import pages_url, url
from odelint.api.finding import Finding
from odelint.api.registry import rule_infos

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    path = path.replace(os.sep, "/")
    return path[2:] if path.startswith("./") else path


def render(findings: Sequence[Finding], *, errors: Sequence[tuple[str, str]] = (), **_) -> str:
    known = {info.code: info for info in rule_infos()}
    codes = sorted({f.code for f in findings})
    rules = []
    for code in codes:
        rule = known.get(code)
        summary = rule.summary if rule else code
        rules.append({
            "id": code,
            "name": rule.name if rule else code,
            "shortDescription": {"text": summary},
            "fullDescription": {"text": rule.docs() if rule else summary},
            **({"helpUri": link} if (link := url(rule) if rule else pages_url()) else {}),
            "defaultConfiguration": {"level": "error"},
            "properties": {"fixable": bool(rule and rule.fix_safety)},
        })
    index = {code: position for position, code in enumerate(codes)}
    results = []
    for f in findings:
        location: dict = {"physicalLocation": {
            "artifactLocation": {"uri": _uri(f.path)},
            "region": {"startLine": f.span.line, "startColumn": f.span.column,
                       "endLine": f.span.end_line, "endColumn": max(f.span.end_column, f.span.column)},
        }}
        result: dict = {"ruleId": f.code, "ruleIndex": index[f.code], "level": "error",
                        "message": {"text": f.message}, "locations": [location]}
        if f.cell is not None:  # a notebook: the region's lines count within this cell
            location["logicalLocations"] = [{"name": f"cell {f.cell}", "fullyQualifiedName": f"{_uri(f.path)}:cell "
                                             f"{f.cell}", "kind": "module"}]
            result["properties"] = {"cell": f.cell}
        results.append(result)
    notifications = [{"level": "error", "message": {"text": f"{path}: {reason}"}} for path, reason in errors]
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "odelint", "version": __version__, "rules": rules,
                                **({"informationUri": home} if (home := pages_url()) else {})}},
            "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notifications}],
            "results": results,
        }],
    }
    return json.dumps(document, indent=2) + "\n"
