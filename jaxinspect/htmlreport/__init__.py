"""The self-contained HTML report (`jaxinspect report`): data assembly, graph layout, charts."""
