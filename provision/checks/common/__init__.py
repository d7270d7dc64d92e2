"""Code two or more checks share (STYLE.md: never in a sibling check, so that no check imports another;
tests/unit/test_layers.py holds every check to it). A module here is named by what it is (``perftest``,
``allreduce``), never by a check, and declares no ``CHECK``: the registry (``provision.checks``) looks for none here.
"""
