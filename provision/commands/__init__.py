"""The commands, one module per verb of the command line, each with ``main(args) -> int``.

``provision.cli`` parses the arguments and imports only the chosen command's module (its
``COMMANDS`` table), so that ``provision checks`` does not load paramiko, jinja2 or ansible-runner.
A command never imports another: what several share is in ``_common`` (console lines, a run's exit
status) and ``_job`` (the main job's phases, for ``run``, ``install`` and ``burnin``).
"""
