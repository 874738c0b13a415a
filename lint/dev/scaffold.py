"""`python -m odelint.dev new-rule CODE NAME FAMILY`: a new rule's module and its fixture
folder, written into the checkout with every place to fill in marked `TODO`. Nothing is
registered by hand: the registry finds the module, `generate` lists it."""

from __future__ import annotations

import ast
from pathlib import Path

from odelint.api.rule import CODE_PATTERN, NAME_PATTERN
from odelint.dev.checkout import FAMILIES, CheckoutError

ENGINE_CODES = {"ODL000": "syntax-error", "ODL001": "io-error"}  # defined in odelint.api.engine_rules


def taken(root: Path) -> dict[str, str]:
    """Code -> name of every rule defined in the checkout's rules package (read, not imported)."""
    found = dict(ENGINE_CODES)
    for path in sorted((root / "rules").rglob("*.py")):
        try:
            tree = ast.parse(path.read_bytes())
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                values = {target.id: statement.value.value for statement in node.body
                          if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
                          for target in statement.targets if isinstance(target, ast.Name)}
                code = values.get("code")
                if isinstance(code, str):
                    found[code] = str(values.get("name", ""))
    return found


def problems(root: Path, code: str, name: str, family: str) -> list[str]:
    """Why the rule cannot be scaffolded as asked (nothing when it can)."""
    found = []
    if not CODE_PATTERN.match(code):
        found.append(f"code {code!r} must look like ODL123")
    if not NAME_PATTERN.match(name):
        found.append(f"name {name!r} must be kebab-case (lower-case words joined by '-')")
    if family not in FAMILIES:
        found.append(f"family {family!r} is not one of {', '.join(sorted(FAMILIES))}")
    elif CODE_PATTERN.match(code) and code[3] != FAMILIES[family]:
        found.append(f"{family} rules have codes ODL{FAMILIES[family]}xx, not {code}")
    rules = taken(root)
    if code in rules:
        found.append(f"{code} is taken by {rules[code]} (a released code never changes meaning)")
    if name in rules.values():
        found.append(f"the name {name} is taken by {next(c for c, n in rules.items() if n == name)}")
    if family in FAMILIES and (root / "rules" / family / module_name(name)).exists():
        found.append(f"rules/{family}/{module_name(name)} exists")
    if (root / "tests" / "fixtures" / code).exists():
        found.append(f"tests/fixtures/{code} exists")
    return found


def module_name(name: str) -> str:
    return name.replace("-", "_") + ".py"


def class_name(name: str) -> str:
    return "".join(word.capitalize() for word in name.split("-"))


RULE = '''"""{code}: TODO one line: the hazard this rule finds."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site
from odelint.api.rule import Flag, Pass, Rule


class {cls}(Rule):
    """TODO one line: what is wrong, as the finding's reader should understand it.

    ## What it does
    TODO: which code is flagged, in terms of the values involved (an Equinox module, a traced
    array, a PRNG key...), as `self.facts` decides them; and what is left alone.

    ## Why is this bad?
    TODO: what happens at run time, with the real error text (or the wrong number), and the
    upstream issue numbers (e.g. jax#1234). `odelint confirm --rule {code}` proves it.

    ## Example
    ```python
    TODO: the smallest program that has the hazard
    ```

    ## Use instead
    ```python
    TODO: the same program, corrected
    ```

    ## Fix safety
    TODO: "No fix: ..." (then fix = "manual" in the fixture), or why the fix is safe (never
    changes what the program computes) or unsafe (needs `--unsafe-fixes`).
    """

    code = "{code}"
    name = "{name}"
    summary = "TODO a one-line summary (odelint rules lists it)"
    # The text gate: the rule runs only on files containing every word of at least one group.
    # Name what the hazard cannot be written without, e.g. (("optax", "init"),).
    triggers = (("TODO",),)
    fixtures = "tests/fixtures/{code}"
    # What a file must contain for the rule to fire (evaluated by the engine on CPython's ast,
    # before LibCST parses anything): e.g. Needs.calls_to(...) & Needs.may_hold_modules().
    # Needs.fact(...) names a Sketch fact of lint/analysis/sketch_facts.py.
    needs = Needs.calls_to("TODO.qualified.name")
    # fix_safety = Safety.SAFE  # (from odelint.api.finding) the best fix the rule offers, if any
    examples = (
        Flag("""
            TODO: code the rule must flag (one finding; `count=` for more)
        """),  # then `python tests/example_spans.py` states where it is reported (`span=`)
        Pass("""
            TODO: code that looks alike but is right: the rule must stay quiet
        """),
    )

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        """TODO: ask the model, e.g. `self.facts.qualname(node.func, site.scope)` and
        `self.facts.kind(argument, site)`, then `self.report(node, "the exact fault")`."""
'''

FIXTURE = '''[[case]]
name = "{slug}"               # kebab-case, unique in this file
hazard = "hazard_{stem}.py"
fixed = "fixed_{stem}.py"
fix = "manual"                # safe | unsafe (fixed = what `odelint check --fix` makes of hazard) | manual
expect = "error"              # error | wrong-value
error = "TODO"                # the exception's class name (expect = "error")
message = "TODO"              # a fragment of its message (expect = "error")
timeout = 120
'''

PROGRAM = '''"""{code}: TODO what this program does.

{role}
"""
import json

import jax.numpy as jnp

# TODO: the smallest realistic program {what}

value = jnp.zeros(())       # TODO: what the code under test computes
reference = jnp.zeros(())   # TODO: what it should compute (by hand, a finite difference...)
print("ODELINT-CHECK", json.dumps({{"value": value.tolist(), "reference": reference.tolist(),
                                   "rtol": 1e-5, "atol": 1e-8}}))
'''


def files(code: str, name: str, family: str) -> dict[str, str]:
    """Path (relative to the checkout) -> content of every file the scaffold writes."""
    stem = name.replace("-", "_")
    fixtures = f"tests/fixtures/{code}"
    return {
        f"rules/{family}/{module_name(name)}": RULE.format(code=code, name=name, cls=class_name(name)),
        f"{fixtures}/fixture.toml": FIXTURE.format(slug=name, stem=stem),
        f"{fixtures}/hazard_{stem}.py": PROGRAM.format(
            code=code, what="with the hazard: odelint must flag it with " + code,
            role="As the hazard: TODO the error it raises (expect = \"error\") or the wrong value it prints."),
        f"{fixtures}/fixed_{stem}.py": PROGRAM.format(
            code=code, what="corrected: odelint must not flag it, and value must be close to reference",
            role="Fixed: TODO why its value is right."),
    }


def new_rule(root: Path, code: str, name: str, family: str) -> list[str]:
    """Write the scaffold; returns the paths written. Raises CheckoutError, writing nothing, when refused."""
    found = problems(root, code, name, family)
    if found:
        raise CheckoutError("; ".join(found))
    written = []
    for relative, text in files(code, name, family).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        written.append(relative)
    return written
