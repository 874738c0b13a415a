"""The one visitor every ODL9xx rule shares: it finds the table's rows for the rule's code in
the file (names resolved through imports and aliases) and builds their fixes."""

from __future__ import annotations

import functools

import libcst as cst
from odelint.analysis import (
    DefinedAs,
    DeprecatedApi,
    Need,
    Needs,
    Site,
    Standing,
    dotted_name,
    rows_for,
    source_of,
    within_module,
)
from odelint.api.finding import Edits, Replace
from odelint.api.rule import Callees, Rule


def _need(row: DeprecatedApi) -> Need:
    """What a file must hold for the row to be found in it (what the visitors below match)."""
    if row.match == "import":  # as `visit_Import` and `visit_ImportFrom` match them
        return Needs.imports_module(row.name, from_parent=row.replacement != row.name)
    named = Needs.imports(row.name) | Needs.mentions(row.name)  # cheap, and implied by a call
    if row.match == "keyword":
        return named & Needs.calls_to(row.name, keywords=(row.keyword,))
    if row.match == "call":
        return named & Needs.calls_to(row.name)
    return named


class DeprecatedApiRule(Rule):
    """Serves the rows of deprecated_apis.toml whose code is this rule's code, as seen from the
    versions the project targets: an API is reported as removed only where it is, as
    deprecated where it still works, and not at all before its deprecation."""

    uses_versions = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A serving rule needs a file that imports or names one of its rows' old spellings, or
        for a row of a call or a keyword, that calls the name (with the keyword): most JAX
        code calls `eqx.filter_jit`, little passes it `fn=`."""
        super().__init_subclass__(**kwargs)
        cls.needs = Needs.any_of(_need(row) for row in rows_for(cls.code))

    def __init__(self, context) -> None:
        super().__init__(context)
        # the names whose import is reported, as (statement, local name); "*" when the module is gone
        self._failing_imports: set[tuple[int, str]] = set()
        self._roots: dict[int, list[tuple[int, str]]] = {}  # attribute reported -> its first name's imports

    def finish(self) -> None:
        """Drop what a compatibility shim handles, and a use whose name comes from an import
        reported here: that import fails first (`from equinox import experimental` before
        `experimental.BatchNorm`)."""
        self.findings = [finding for finding in self.findings
                         if not (finding.node is not None and self.facts.copes_with_absence(finding.node))
                         and not self._after_failed_import(finding.node)]

    def _after_failed_import(self, node: cst.CSTNode | None) -> bool:
        return any(bound in self._failing_imports or (bound[0], "*") in self._failing_imports
                   for bound in self._roots.get(id(node), ()))

    @classmethod
    def callees(cls) -> Callees:
        rows = (*_rows_of(cls.code, "call"), *_rows_of(cls.code, "keyword"))
        return Callees(names=frozenset(row.name for row in rows))

    def _rows_of(self, match: str) -> tuple[DeprecatedApi, ...]:
        return _rows_of(self.code, match)

    def _standing(self, row: DeprecatedApi) -> Standing | None:
        return row.standing(self.context.versions.get(row.package))

    def _message(self, row: DeprecatedApi, standing: Standing, spelled: str, error: str | None = None) -> str:
        if not standing.fails:
            return f"`{spelled}` {standing.status} (from then on: {error or row.error}); use {row.use}"
        return f"`{spelled}` {standing.status}: {error or row.error}; use {row.use}"

    # -- `jax.tree_map`, `j.tree_map`, `jtu.tree_multimap` ---------------------------------

    @classmethod
    def attributes(cls) -> frozenset[str]:
        """`a.b.name` can only resolve to `....name`: the last names of the rows' references."""
        return _last_names(cls.code)

    def visit_Attribute(self, node: cst.Attribute, site: Site) -> None:
        if node.attr.value not in _last_names(self.code):  # handed every attribute when undeclared
            return
        rows = self._rows_of("reference")
        qualname = self.facts.qualname(node, site.scope)
        row = next((row for row in rows if row.name == qualname), None)
        standing = self._standing(row) if row is not None else None
        if row is None or standing is None:
            return
        fix = None
        if row.fixable and standing.fixable:
            fix = self.fix(f"Use `{row.replacement}`", lambda: self._rename(node, row, site))
        self._roots[id(node)] = self._imports_binding_root(node, site)
        self.report(node, self._message(row, standing, source_of(self.context.module, node)), fix=fix)

    def _imports_binding_root(self, node: cst.Attribute, site: Site) -> list[tuple[int, str]]:
        """The imports (statement, local name) that bind the first name of the chain `node`."""
        root: cst.BaseExpression = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return []
        return [(id(definition.node), root.value) for definition in self.facts.definitions(root, site)
                if definition.what is DefinedAs.IMPORT]

    def _rename(self, node: cst.Attribute, row: DeprecatedApi, site: Site) -> Edits:
        new, imports = self.facts.reference(row.replacement, site)
        return Edits([Replace(node, new)], imports)

    # -- `from jax import tree_map`, `from jax.config import config`, `import jax.config` ---

    def visit_ImportFrom(self, node: cst.ImportFrom, site: Site) -> None:
        if node.relative or node.module is None:
            return
        module = dotted_name(node.module)
        if module is None:
            return
        names = [] if isinstance(node.names, cst.ImportStar) else list(node.names)
        for row in self._rows_of("import"):
            # `from jax import config` is fine: the name lives on as an attribute (the
            # config object), which its replacement being itself says
            from_parent = row.replacement != row.name and any(
                f"{module}.{dotted_name(alias.name)}" == row.name for alias in names)
            if within_module(module, row.name) or from_parent:
                self._report_import_from_module(node, module, names, row)
        if (id(node), "*") in self._failing_imports:
            return  # the module is gone: the import fails there, whatever names it asks for
        for alias in names:
            full = f"{module}.{dotted_name(alias.name)}"
            named = next((row for row in self._rows_of("reference") if row.name == full), None)
            if named is not None:
                self._report_from_import(node, alias, named)

    def _report_from_import(self, node: cst.ImportFrom, alias: cst.ImportAlias, row: DeprecatedApi) -> None:
        standing = self._standing(row)
        if standing is None:
            return
        module, _, name = row.name.rpartition(".")
        failure = f"ImportError: cannot import name '{name}' from '{module}'" if row.outcome == "error" else None
        message = self._message(row, standing, row.name, failure)
        fix = None
        if row.fixable and standing.fixable and len(node.names) == 1:  # type: ignore[arg-type]
            fix = self.fix(f"Import `{row.import_from}` instead",
                           lambda: Edits([Replace(node, _import_from(node, alias, row.import_from))]))
        if row.outcome == "error":
            self._failing_imports.add((id(node), _local_name(alias)))
        self.report(alias, message, fix=fix)

    def _report_import_from_module(self, node: cst.ImportFrom, module: str,
                                   names: list[cst.ImportAlias], row: DeprecatedApi) -> None:
        standing = self._standing(row)
        if standing is None:
            return
        fix = None
        parent, _, attr = row.replacement.rpartition(".")
        if (row.fixable and standing.fixable and module == row.name and len(names) == 1
                and dotted_name(names[0].name) == attr):
            fix = self.fix(f"Import `{attr}` from `{parent}`",
                           lambda: Edits([Replace(node, _import_from(node, names[0], row.replacement))]))
        imported = next((dotted_name(alias.name) for alias in names
                         if f"{module}.{dotted_name(alias.name)}" == row.name), None)
        # `from parent import gone` fails with an ImportError of its own; a row whose failure is
        # not the import (a stub module whose calls raise) keeps its own error text
        missing = row.error.startswith("ModuleNotFoundError")
        error = f"ImportError: cannot import name '{imported}' from '{module}'" if imported and missing else None
        self._failing_imports.add((id(node), "*"))
        self.report(node, self._message(row, standing, row.name, error), fix=fix)

    def visit_Import(self, node: cst.Import, site: Site) -> None:
        for row in self._rows_of("import"):
            for alias in node.names:
                if within_module(dotted_name(alias.name) or "", row.name):
                    self._report_import(node, alias, row)

    def _report_import(self, node: cst.Import, alias: cst.ImportAlias, row: DeprecatedApi) -> None:
        """`import jax.config` becomes `import jax` when the old module's name lives on as an
        attribute of its package; an alias (`import jax.config as c`) bound the module, so no fix."""
        standing = self._standing(row)
        if standing is None:
            return
        full = dotted_name(alias.name)
        fix = None
        alone = alias.asname is None and len(node.names) == 1
        if row.fixable and standing.fixable and full == row.name == row.replacement and alone:
            top = cst.ImportAlias(cst.Name(row.package))
            fix = self.fix(f"Import `{row.package}`", lambda: Edits([Replace(node, node.with_changes(names=[top]))]))
        self._failing_imports.add((id(node), "*"))
        self.report(alias, self._message(row, standing, row.name), fix=fix)

    # -- `jnp.clip(x, a_min=0)`, `jax.pure_callback(..., vectorized=True)`, `eqx.static_field()` --

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        keyword_rows = self._rows_of("keyword")
        call_rows = self._rows_of("call")
        if not keyword_rows and not call_rows:
            return
        qualname = self.facts.qualname(node.func, site.scope)
        if qualname is None:
            return
        for row in call_rows:
            if row.name == qualname:
                self._report_call(node, row, site)
        matched = [(arg, row) for arg in node.args for row in keyword_rows
                   if row.name == qualname and arg.keyword is not None and arg.keyword.value == row.keyword
                   and self._standing(row) is not None]
        if matched:
            self._report_keywords(node, matched)

    def _report_keywords(self, node: cst.Call, matched: list[tuple[cst.Arg, DeprecatedApi]]) -> None:
        first_arg, first = matched[0]
        standing = self._standing(first)
        assert standing is not None  # rows not yet deprecated on the target were left out
        function = source_of(self.context.module, node.func)
        keywords = ", ".join(f"`{row.keyword}=`" for _, row in matched)
        since = (f" (removed in {first.package} {first.removed})" if first.removed
                 else f" (deprecated in {first.package} {first.deprecated})" if first.deprecated else "")
        uses = " and ".join(row.use for _, row in matched)
        if standing.fails:
            message = f"`{function}` no longer accepts {keywords}{since}: {first.error}; use {uses}"
        else:
            message = f"`{function}` {keywords}: {standing.status} (from then on: {first.error}); use {uses}"
        fixable = standing.fixable and all(row.fixable for _, row in matched)
        replacements = [_renamed_keyword(arg, row) for arg, row in matched] if fixable else []
        renamed = [new for new in replacements if new is not None]
        fix = None
        if fixable and len(renamed) == len(matched):
            edits = Edits([Replace(arg, new) for (arg, _), new in zip(matched, renamed, strict=True)])
            fix = self.fix("Rename " + keywords, lambda: edits)
        self.report(first_arg, message, fix=fix)

    def _report_call(self, node: cst.Call, row: DeprecatedApi, site: Site) -> None:
        standing = self._standing(row)
        if standing is None:
            return
        function = source_of(self.context.module, node.func)
        fix = None
        if row.fixable and standing.fixable and not any(arg.keyword is not None and arg.keyword.value == row.add_keyword
                                   for arg in node.args):
            fix = self.fix(f"Use `{row.use.strip('`')}`", lambda: self._call_with_keyword(node, row, site))
        self.report(node.func, self._message(row, standing, f"{function}()"), fix=fix)

    def _call_with_keyword(self, node: cst.Call, row: DeprecatedApi, site: Site) -> Edits:
        func, imports = self.facts.reference(row.replacement, site)
        args = list(node.args)
        if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(cst.Arg(cst.Name("True"), keyword=cst.Name(row.add_keyword),
                            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                  whitespace_after=cst.SimpleWhitespace(""))))
        return Edits([Replace(node, node.with_changes(func=func, args=args))], imports)


@functools.cache
def _rows_of(code: str, match: str) -> tuple[DeprecatedApi, ...]:
    """The table's rows for `code` that match this way ("reference", "import", "call", "keyword")."""
    return tuple(row for row in rows_for(code) if row.match == match)


@functools.cache
def _last_names(code: str) -> frozenset[str]:
    """The last component of each name `code`'s references rows look for."""
    return frozenset(row.name.rpartition(".")[2] for row in _rows_of(code, "reference"))


def _local_name(alias: cst.ImportAlias) -> str:
    """The name a `from` import binds (`x` for `import a as x`, else the imported name)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return dotted_name(alias.name) or ""


def _import_from(node: cst.ImportFrom, alias: cst.ImportAlias, target: str) -> cst.ImportFrom:
    """`from <target's module> import <target's name>`, bound to the name `alias` bound."""
    module, _, name = target.rpartition(".")
    local = _local_name(alias)
    asname = None if not local or local == name else cst.AsName(cst.Name(local))
    return node.with_changes(module=cst.parse_expression(module),
                             names=[cst.ImportAlias(cst.Name(name), asname=asname)])


def _renamed_keyword(arg: cst.Arg, row: DeprecatedApi) -> cst.Arg | None:
    """The argument under its new keyword, its literal value mapped; None when it cannot be."""
    renamed = arg.with_changes(keyword=cst.Name(row.new_keyword))
    if not row.values:
        return renamed
    if not isinstance(arg.value, cst.Name) or arg.value.value not in row.values:
        return None
    return renamed.with_changes(value=cst.SimpleString(f'"{row.values[arg.value.value]}"'))
