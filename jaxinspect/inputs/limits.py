"""Limits shared by the CLI's option defaults and the core (no imports, so --help stays fast)."""

#: Refuse to generate inputs larger than this many bytes unless --max-input-bytes says more.
DEFAULT_MAX_INPUT_BYTES = 2 * 1024**3
