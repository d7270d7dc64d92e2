"""Run history: every run's measurements and stack fingerprint in one SQLite file (``db``), the
fingerprint read from what a run already saved (``fingerprint``) and the regression gates that
compare a run with the node's own past and with its rack (``regress``)."""
