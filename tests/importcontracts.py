"""An import-linter contract over the imports that run when a module is imported (`make lint`).

import-linter's graph holds every ``import`` statement, including those inside functions, but
jaxinspect keeps jax off the path of ``--help`` and ``diff`` precisely by importing it inside
the functions that need it. ``module_level_forbidden`` is the ``forbidden`` contract on the graph
without those deferred imports (in a function body or under ``if TYPE_CHECKING:``), so it
follows every chain of imports that really runs when its source modules are imported.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
from pathlib import Path

from grimp import ImportGraph
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.domain.contract import ContractCheck


class ModuleLevelForbiddenContract(ForbiddenContract):
    """``forbidden``, counting only the imports a module runs when it is imported."""

    type_name = "module_level_forbidden"

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        return super().check(_without_deferred_imports(graph), verbose)


def _without_deferred_imports(graph: ImportGraph) -> ImportGraph:
    """A copy of ``graph`` without the edges whose every import statement is deferred."""
    eager = copy.deepcopy(graph)
    for importer in sorted(graph.modules):
        lines = _eager_import_lines(importer)
        if lines is None:  # an external package, or no source to read: keep its edges
            continue
        for imported in graph.find_modules_directly_imported_by(importer):
            details = graph.get_import_details(importer=importer, imported=imported)
            if details and not any(d["line_number"] in lines for d in details):
                eager.remove_import(importer=importer, imported=imported)
    return eager


def _eager_import_lines(module: str) -> set[int] | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    lines: set[int] = set()
    _collect(tree.body, lines)
    return lines


def _collect(body: list[ast.stmt], lines: set[int]) -> None:
    """Line numbers of the import statements in ``body`` that run at import time."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            lines.add(node.lineno)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue  # runs when called
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            _collect(node.orelse, lines)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    _collect([n for n in inner if isinstance(n, ast.stmt)], lines)
                    for handler in inner:
                        if isinstance(handler, ast.ExceptHandler):
                            _collect(handler.body, lines)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
