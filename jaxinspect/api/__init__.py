"""The Python API: ``jaxinspect.inspect``, ``Inspection``, ``jaxinspect.diff`` (docs/python.md)."""
