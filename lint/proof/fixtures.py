"""Fixture cases (`tests/fixtures/<CODE>/fixture.toml`) and how their runs are judged.

The contract is tests/fixtures/README.md. Shared by `odelint confirm` and the tests.
Values arrive as JSON, so they are compared here without numpy (odelint never imports
the numeric stack).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import tomllib

FIXTURE_FILE = "fixture.toml"
CHECK_PREFIX = "ODELINT-CHECK "
RUN_PREFIX = "ODELINT-RUN "
FIXES = ("safe", "unsafe", "manual")
EXPECTS = ("error", "wrong-value")
DEFAULT_TIMEOUT = 120.0
_KEYS = {"name", "hazard", "fixed", "fix", "expect", "error", "message", "timeout", "pins_hazard", "pins_fixed"}
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class FixtureError(ValueError):
    """A fixture.toml that breaks the contract."""


@dataclasses.dataclass(frozen=True)
class Case:
    code: str
    directory: str
    name: str
    hazard: str
    fixed: str
    fix: str
    expect: str
    error: str | None = None
    message: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    pins_hazard: str | None = None
    pins_fixed: str | None = None

    def path(self, filename: str) -> str:
        return os.path.join(self.directory, filename)

    @property
    def needs_pins(self) -> bool:
        return self.pins_hazard is not None


def load_cases(directory: str, code: str) -> list[Case]:
    """The cases of one rule's fixture folder; FixtureError says what is wrong."""
    path = os.path.join(directory, FIXTURE_FILE)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise FixtureError(f"{path}: cannot read: {error.strerror}") from error
    except tomllib.TOMLDecodeError as error:
        raise FixtureError(f"{path}: invalid TOML: {error}") from error
    if set(data) != {"case"} or not isinstance(data["case"], list) or not data["case"]:
        raise FixtureError(f"{path}: expected one or more [[case]] tables and nothing else")
    cases = [_case(path, directory, code, entry) for entry in data["case"]]
    names = [case.name for case in cases]
    if len(set(names)) != len(names):
        raise FixtureError(f"{path}: case names must be unique")
    return cases


def _case(path: str, directory: str, code: str, entry: object) -> Case:
    if not isinstance(entry, dict):
        raise FixtureError(f"{path}: every case must be a table")
    where = f"{path}: case {entry.get('name', '?')!r}"
    unknown = set(entry) - _KEYS
    if unknown:
        raise FixtureError(f"{where}: unknown keys {sorted(unknown)}")
    for key in ("name", "hazard", "fixed", "fix", "expect"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise FixtureError(f"{where}: `{key}` is required (a string)")
    if not _NAME.match(entry["name"]):
        raise FixtureError(f"{where}: name must be kebab-case")
    if entry["fix"] not in FIXES:
        raise FixtureError(f"{where}: fix must be one of {', '.join(FIXES)}")
    if entry["expect"] not in EXPECTS:
        raise FixtureError(f"{where}: expect must be one of {', '.join(EXPECTS)}")
    if entry["expect"] == "error":
        for key in ("error", "message"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise FixtureError(f"{where}: expect = \"error\" needs `{key}` (a string)")
    elif "error" in entry or "message" in entry:
        raise FixtureError(f"{where}: `error`/`message` only go with expect = \"error\"")
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise FixtureError(f"{where}: timeout must be a positive number of seconds")
    if ("pins_hazard" in entry) != ("pins_fixed" in entry):
        raise FixtureError(f"{where}: pins_hazard and pins_fixed go together")
    for key in ("hazard", "fixed", "pins_hazard", "pins_fixed"):
        if key in entry and not os.path.isfile(os.path.join(directory, entry[key])):
            raise FixtureError(f"{where}: {key} file {entry[key]!r} does not exist")
    return Case(code, directory, entry["name"], entry["hazard"], entry["fixed"], entry["fix"], entry["expect"],
                entry.get("error"), entry.get("message"), float(timeout), entry.get("pins_hazard"),
                entry.get("pins_fixed"))


@dataclasses.dataclass(frozen=True)
class Check:
    """What a program computed and what it should have computed."""

    value: object
    reference: object
    rtol: float = 1e-5
    atol: float = 1e-8

    def close(self) -> bool:
        return allclose(self.value, self.reference, self.rtol, self.atol)


def parse_check(stdout: str) -> Check:
    """The last ODELINT-CHECK line of a program's output; ValueError when there is none or it is malformed."""
    lines = [line for line in stdout.splitlines() if line.startswith(CHECK_PREFIX)]
    if not lines:
        raise ValueError("the program printed no ODELINT-CHECK line")
    try:
        data = json.loads(lines[-1][len(CHECK_PREFIX):])
    except json.JSONDecodeError as error:
        raise ValueError(f"the ODELINT-CHECK line is not JSON: {error}") from error
    if not isinstance(data, dict) or "value" not in data or "reference" not in data:
        raise ValueError("the ODELINT-CHECK line needs \"value\" and \"reference\"")
    tolerances = {key: data[key] for key in ("rtol", "atol") if key in data}
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in tolerances.values()):
        raise ValueError("rtol and atol must be non-negative numbers")
    return Check(data["value"], data["reference"], **tolerances)


def allclose(value: object, reference: object, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    """numpy.allclose for JSON: same nesting, booleans equal, |v - r| <= atol + rtol * |r|.

    NaN is never close (a NaN gradient is a wrong value); infinities must match exactly."""
    if isinstance(value, bool) or isinstance(reference, bool):
        return isinstance(value, bool) and isinstance(reference, bool) and value == reference
    if isinstance(value, (int, float)) and isinstance(reference, (int, float)):
        if math.isinf(value) or math.isinf(reference):
            return value == reference
        return abs(value - reference) <= atol + rtol * abs(reference)
    if isinstance(value, list) and isinstance(reference, list):
        return len(value) == len(reference) and all(
            allclose(v, r, rtol, atol) for v, r in zip(value, reference, strict=True))
    return False


def short(value: object, limit: int = 60) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclasses.dataclass(frozen=True)
class Run:
    """One program's process, as the bootstrap (confirm.BOOTSTRAP) reported it."""

    returncode: int | None          # None: killed at its timeout
    stdout: str
    stderr: str
    seconds: float
    raised: dict | None = None      # {"type", "names", "message"} of an uncaught exception
    versions: dict = dataclasses.field(default_factory=dict)
    backend: str | None = None

    @classmethod
    def from_process(cls, returncode: int | None, stdout: str, stderr: str, seconds: float) -> Run:
        lines = [line for line in stderr.splitlines() if line.startswith(RUN_PREFIX)]
        report: dict = {}
        if lines:
            try:
                report = json.loads(lines[-1][len(RUN_PREFIX):])
            except json.JSONDecodeError:
                report = {}
        return cls(returncode, stdout, stderr, seconds, report.get("raised"), report.get("versions") or {},
                   report.get("backend"))

    def outcome(self) -> str:
        """How the process ended, in a few words."""
        if self.returncode is None:
            return f"timed out after {self.seconds:.0f} s"
        if self.raised:
            first = (self.raised.get("message") or "").strip().splitlines()
            return f"raised {self.raised['type']}: {first[0][:100] if first else ''}".rstrip(": ")
        if self.returncode != 0:
            tail = self.stderr.strip().splitlines()[-1:] or ["(no output)"]
            return f"exited with status {self.returncode}: {tail[0][:100]}"
        return "exited 0"


def judge_hazard(case: Case, run: Run) -> tuple[bool, str]:
    """Did the hazard program reproduce the failure the case expects?"""
    if case.expect == "error":
        if run.returncode is None or not run.raised:
            return False, f"{run.outcome()}; expected {case.error}: {case.message}"
        names = run.raised.get("names") or [run.raised.get("type")]
        if case.error not in names:
            return False, f"{run.outcome()}; expected {case.error}"
        if case.message not in (run.raised.get("message") or ""):
            return False, f"{run.outcome()}; its message lacks {case.message!r}"
        return True, run.outcome()
    if run.returncode != 0:
        return False, f"{run.outcome()}; expected it to run and compute a wrong value"
    try:
        check = parse_check(run.stdout)
    except ValueError as error:
        return False, str(error)
    if check.close():
        return False, f"value {short(check.value)} matches the reference: the hazard did not show"
    return True, f"wrong value {short(check.value, 40)} (reference {short(check.reference, 40)})"


def judge_references(case: Case, hazard: Run, fixed: Run) -> tuple[bool, str]:
    """A wrong value means wrong against one truth: both programs of a wrong-value case must
    report the same reference (computed without the construct under test), or the hazard's
    "wrong value" may only be a different question answered right."""
    if case.expect != "wrong-value":
        return True, ""
    try:
        hazard_reference = parse_check(hazard.stdout).reference
        fixed_reference = parse_check(fixed.stdout).reference
    except ValueError as error:
        return False, str(error)
    if not allclose(hazard_reference, fixed_reference) or not allclose(fixed_reference, hazard_reference):
        return False, (f"the hazard's reference {short(hazard_reference, 40)} differs from the fixed program's "
                       f"{short(fixed_reference, 40)}")
    return True, "both programs report the same reference"


def judge_fixed(run: Run) -> tuple[bool, str]:
    """Did the fixed program run cleanly and compute the reference value?"""
    if run.returncode != 0:
        return False, run.outcome()
    try:
        check = parse_check(run.stdout)
    except ValueError as error:
        return False, str(error)
    if not check.close():
        return False, f"value {short(check.value, 40)} is not close to the reference {short(check.reference, 40)}"
    return True, "value matches the reference"
