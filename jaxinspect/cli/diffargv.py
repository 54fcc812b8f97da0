"""The tokens of a ``jaxinspect diff`` command line, read with nothing but builtins.

Shared by the plain ``diff`` parser (``commands.diff.parse_plain_diff``, which checks the values)
and by the console script, which reads the two paths before it imports anything else, so the
count of a large old HLO file can start at once (see ``snapshot.loosefile.prestart_count``).
"""

# Options that take a value: option string -> DiffArgs field. Flags: option -> (field, value).
VALUE_OPTIONS = {
    "--fail-on": "fail_on",
    "--format": "output_format",
    "-f": "output_format",
    "--context": "context",
    "--color": "color",
    "--text-diff": "text_diff",
}
FLAG_OPTIONS = {
    "--text": ("text", True),
    "--no-text": ("text", False),
    "--debug": ("debug", True),
}


def diff_tokens(argv: list[str]) -> tuple[dict[str, str], dict[str, bool], list[str]] | None:
    """``argv`` (after the program name) as a ``diff``: raw option values by field, flags by
    field, and the paths; ``None`` if it is no ``diff`` or an option is unknown or lacks its
    value. The values are not checked here, nor how many paths there are."""
    if not argv or argv[0] != "diff":
        return None
    values: dict[str, str] = {}
    flags: dict[str, bool] = {}
    paths: list[str] = []
    tokens = iter(argv[1:])
    for token in tokens:
        if token == "--":
            paths.extend(tokens)
        elif token in FLAG_OPTIONS:
            field, flag = FLAG_OPTIONS[token]
            flags[field] = flag
        elif token.startswith("-") and token != "-":
            name, equals, attached = token.partition("=")
            value = attached if equals else next(tokens, None)
            if name not in VALUE_OPTIONS or value is None:
                return None
            values[VALUE_OPTIONS[name]] = value
        else:
            paths.append(token)
    return values, flags, paths
