"""The package's shape, as docs/architecture.md describes it."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jaxinspect"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def test_the_package_top_holds_at_most_ten_modules() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


def test_every_module_starts_with_a_docstring() -> None:
    missing = [
        str(path.relative_to(ROOT))
        for path in PACKAGE.rglob("*.py")
        if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not missing


def test_every_file_and_folder_the_architecture_page_names_exists() -> None:
    files = {str(p.relative_to(ROOT)) for p in ROOT.glob("*/**/*") if _ours(p)}
    files |= {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*") if _ours(p)}
    files |= {p.name for p in ROOT.iterdir()}
    named = set(re.findall(r"`([a-z_/{},.-]+(?:\.py|\.json|/))`", ARCHITECTURE.read_text()))
    assert len(named) > 30
    unknown = []
    for name in named:
        for one in _expand(name):
            one = one.rstrip("/")
            if not any(f == one or f.endswith("/" + one) for f in files):
                unknown.append(one)
    assert not unknown, unknown


def _ours(path: Path) -> bool:
    return not {"__pycache__", ".venv", ".git"} & set(path.parts)


def _expand(name: str) -> list[str]:
    """``snapshot/{console,jsondoc}.py`` -> the two paths it stands for."""
    match = re.search(r"\{([^}]*)\}", name)
    if match is None:
        return [name]
    return [name[: match.start()] + part + name[match.end() :] for part in match[1].split(",")]
