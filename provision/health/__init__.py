"""``provision health``: a node-local health check that slurmd runs between jobs (``HealthCheckProgram``, a
``Prolog``, an ``Epilog``), or cron or a systemd timer, in LBNL NHC's place (https://github.com/mej/nhc).

NHC's contract, kept: it runs on the node as root, ends within seconds, prints one line on failure
(``ERROR:  provision-health:  Health check failed:  <check> <finding>``, as NHC's ``die`` prints
``ERROR:  nhc:  Health check failed:  ...``) and nothing when the node is healthy, drains its own node with a
reason of its own (``selfdrain.PREFIX``) and resumes it only when the reason is its own and every check passes,
and never touches a node someone else drained or that is DOWN.

What it runs (``runner``): the checks of the ``health`` set (``provision.checks.sets``: only checks whose
``Budget.loads`` is "": reads of nvidia-smi, the kernel log, sysfs, lspci, ibstat), through the burn-in engine on
this machine (``provision.engine.local``), within one time budget for the whole call; a check still running when
the budget ends is cut (its tool killed) and is the health check's own error, never the node's.

Modes (``modes``): ``periodic`` (HealthCheckProgram, cron, a timer), ``prolog`` (before a job: a smaller
budget, and a failure of the health check itself exits 0 so that Slurm does not drain the node for it), ``epilog``
(after a job: the same, and the checks that load a GPU may run there, when the site names them, only while no
process holds a GPU).

Nothing is kept per call unless asked: the last result as one small JSON file (``state``) and a Prometheus textfile
for node_exporter's textfile collector; a run folder (report.json, JUnit, raw outputs) and the history only with
``--keep-run``/``--history``.
"""
