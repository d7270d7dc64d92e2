"""The burn-in engine: jobs by scope over a transport (``burnin``), the staged verdict of a
check's outputs (``verdict``), and judging a saved run again (``reevaluate``)."""
