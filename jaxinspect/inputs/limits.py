"""Limits shared by the CLI's option defaults and the core (no imports, so --help stays fast)."""

#: Refuse to generate inputs larger than this many bytes unless --max-input-bytes says more.
DEFAULT_MAX_INPUT_BYTES = 2 * 1024**3

#: The most devices a mesh, ``devices:`` or ``--devices`` may name: more than any TPU slice
#: has; past it a number is a typo, and math on it (a mesh's product) only grows.
MAX_DEVICES = 65_536
#: The most fake CPU devices jaxinspect sets up (``--devices N`` or a mesh on CPU): 4,096
#: take about 13 s and 650 MB to start; 100,000 would take minutes and gigabytes.
MAX_CPU_DEVICES = 4_096
