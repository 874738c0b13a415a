"""SARIF 2.1.0 for code-scanning dashboards: one run, the rules that fired, their results."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from odelint import __version__
from odelint.api.docs import pages_url, url
from odelint.api.finding import Finding, Span, severity
from odelint.api.registry import rule_infos

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    path = path.replace(os.sep, "/")
    return path[2:] if path.startswith("./") else path


def _location(path: str, span: Span, cell: int | None) -> dict:
    location: dict = {"physicalLocation": {
        "artifactLocation": {"uri": _uri(path)},
        "region": {"startLine": span.line, "startColumn": span.column,
                   "endLine": span.end_line, "endColumn": max(span.end_column, span.column)},
    }}
    if cell is not None:  # a notebook: the region's lines count within this cell
        location["logicalLocations"] = [{"name": f"cell {cell}", "fullyQualifiedName": f"{_uri(path)}:cell {cell}",
                                         "kind": "module"}]
    return location


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
            "defaultConfiguration": {"level": severity(code)},
            "properties": {"fixable": bool(rule and rule.fix_safety)},
        })
    index = {code: position for position, code in enumerate(codes)}
    results = []
    for f in findings:
        location = _location(f.path, f.span, f.cell)
        result: dict = {"ruleId": f.code, "ruleIndex": index[f.code], "level": f.severity,
                        "message": {"text": f.message}, "locations": [location]}
        if f.cell is not None:
            result["properties"] = {"cell": f.cell}
        if f.related:
            result["relatedLocations"] = [{"id": number, "message": {"text": related.message},
                                           **_location(f.path, related.span, related.cell)}
                                          for number, related in enumerate(f.related)]
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
