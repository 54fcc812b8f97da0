"""`stages` (and `jaxpr`, `stablehlo`, `hlo`): the inspection runner, cases, report, renderers."""
