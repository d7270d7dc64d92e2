"""Slurm: drain the nodes a burn-in failed, return to service the ones this tool drained that now pass
(``drain``), through Slurm's own ``scontrol`` (``scontrol``)."""
