"""Host names as Slurm hostlists: ``provision.results.hostlist`` (the checks fold host names too, and sit below
the report layer), named here for the report's modules."""
from provision.results.hostlist import expand, fold

__all__ = ["expand", "fold"]
