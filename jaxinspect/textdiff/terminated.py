"""Texts whose every line ends with a newline: what the line diff reads (builtins only, so the
console script can start counting a file before it imports the diff itself)."""


def terminated(text: str) -> str:
    """``text`` with a final newline, so every line ends with one (``""`` has no lines)."""
    return text if not text or text.endswith("\n") else text + "\n"
