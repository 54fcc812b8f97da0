"""A stack of transformer blocks (transformer.py's block, one parameter set per layer)."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "transformer", Path(__file__).with_name("transformer.py")
)
_transformer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_transformer)


def stack(layers, x, num_heads=4):
    """Apply each layer's block in turn (unrolled: the HLO holds every layer)."""
    for params in layers:
        x = _transformer.block(params, x, num_heads)
    return x
