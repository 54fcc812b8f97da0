"""Values of the output options: --format and --color (no typer: `diff` parses them alone)."""

import enum


class OutputFormat(enum.StrEnum):
    """A value of ``--format``; each command offers the ones it can print."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


#: What each format is for, as ``--format``'s help says it.
AUDIENCE: dict[OutputFormat, str] = {
    OutputFormat.TABLE: "table for people",
    OutputFormat.JSON: "json for machines",
    OutputFormat.MARKDOWN: "markdown for CI",
}


class TextDiffMode(enum.StrEnum):
    """A value of ``--text-diff``: how ``diff`` and ``check`` compare stage texts."""

    STRUCTURAL = "structural"  # names matched by structure first: a renaming is no change
    LINES = "lines"  # a plain line diff of the normalized texts


class ColorMode(enum.StrEnum):
    """A value of ``--color``: when the unified diff of ``diff`` and ``check`` is coloured."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"
