"""Views of a run (``provision.results.model.Run``, saved as report.json by the run store):
JUnit XML (``junit``), the terminal summary (``summary``), the self-contained HTML report
(``html``, plots from ``svg``) and the node_exporter textfile (``prometheus``)."""
