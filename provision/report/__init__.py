"""Views of a run (``provision.results.model.Run``, saved as report.json by the run store):
JUnit XML (``junit``) and the terminal summary (``summary``)."""
