"""Multi-case spec files: `cases:` maps a case name to one spec (args, static, donate)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jaxinspect.errors import SpecError
from jaxinspect.inputs.spec import Spec, parse_spec_document, parse_yaml, read_spec_file
from jaxinspect.suggest import did_you_mean

#: Name given to the one case of a spec file written without ``cases:``.
SINGLE_CASE = "default"

_CASE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True, slots=True)
class SpecFile:
    """A parsed spec file: several named cases, or one case written as a plain spec.

    Attributes:
        source: The file's path, for error messages.
        cases: ``(name, Spec)`` in file order; a plain spec is one case named ``default``.
        has_cases: Whether the file was written with ``cases:``.
    """

    source: str
    cases: tuple[tuple[str, Spec], ...]
    has_cases: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """Case names in file order."""
        return tuple(name for name, _ in self.cases)

    def select(self, name: str | None) -> tuple[tuple[str, Spec], ...]:
        """All cases (``name`` is ``None``) or the one called ``name``.

        Raises:
            SpecError: No case has that name, or the file has no ``cases:``.
        """
        if name is None:
            return self.cases
        if not self.has_cases:
            raise SpecError(f"--case {name}: {self.source} has no `cases:`; drop --case")
        for case_name, spec in self.cases:
            if case_name == name:
                return ((case_name, spec),)
        raise SpecError(
            f"--case {name}: {self.source} has no case `{name}`{did_you_mean(name, self.names)}",
            hint=f"Cases: {', '.join(self.names)}.",
        )

    def single(self, name: str | None) -> Spec:
        """The one spec a single-case command runs.

        Raises:
            SpecError: The file has several cases and ``name`` does not pick one.
        """
        chosen = self.select(name)
        if len(chosen) > 1:
            raise SpecError(
                f"{self.source} has {len(chosen)} cases ({', '.join(self.names)}); "
                "choose one with --case NAME"
            )
        return chosen[0][1]


def load_spec_cases(path: str | Path) -> SpecFile:
    """Read a spec file that may hold ``cases:``.

    Raises:
        SpecError: The file is missing, not YAML, or a case is malformed (naming the key).
    """
    source = str(path)
    document = parse_yaml(read_spec_file(path), source=source)
    return parse_spec_cases_document(document, source, folder=str(Path(path).parent))


def parse_spec_cases_text(text: str, *, source: str, folder: str | None = None) -> SpecFile:
    """Parse spec YAML text that may hold ``cases:``; ``source`` names it in errors."""
    return parse_spec_cases_document(parse_yaml(text, source=source), source, folder=folder)


def parse_spec_cases_document(
    document: object, source: str, *, folder: str | None = None
) -> SpecFile:
    """Validate a loaded YAML document as a plain spec or a ``cases:`` mapping.

    ``folder`` is where relative ``from:`` files start (the spec file's folder).
    """
    if not isinstance(document, Mapping) or "cases" not in document:
        spec = parse_spec_document(document, source=source, folder=folder)
        return SpecFile(source, ((SINGLE_CASE, spec),), has_cases=False)
    others = [str(k) for k in document if k != "cases"]
    if others:
        raise SpecError(
            f"{source}: with `cases:`, the top level holds nothing else (found `{others[0]}`)",
            hint="Put args, static and donate inside each case.",
        )
    raw = document["cases"]
    if not isinstance(raw, Mapping) or not raw:
        raise SpecError(
            f"{source}: cases must be a non-empty mapping from case name to "
            "{args: ..., static: ..., donate: ...}"
        )
    cases = []
    for name, body in raw.items():
        if not isinstance(name, str) or not _CASE_NAME.match(name):
            raise SpecError(
                f"{source}: cases: {name!r} is not a case name (letters, digits, _ . -)"
            )
        where = f"{source}: cases.{name}"
        if not isinstance(body, Mapping):
            raise SpecError(f"{where}: a case is a mapping with `args:` (and `static:`, `donate:`)")
        cases.append((name, parse_spec_document(body, source=where, folder=folder)))
    return SpecFile(source, tuple(cases), has_cases=True)
