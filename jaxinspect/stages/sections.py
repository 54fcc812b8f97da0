"""Names of the IR stages and report sections, shared by the CLI and the report model.

Kept apart from ``base/inspection.py`` so the CLI can build ``--help`` without creating every
report dataclass.
"""

#: Stage names in pipeline order, as used by ``--stage`` and under ``stages`` in JSON.
IR_STAGES = ("jaxpr", "stablehlo", "hlo")
#: Every section ``--stage`` can select.
SECTIONS = (*IR_STAGES, "ops", "cost", "memory", "timings")
