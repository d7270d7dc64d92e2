#!/usr/bin/python3
"""A simulated GPU-stack daemon (nvidia-persistenced, nv-fabricmanager, nv-hostengine, nvidia-imex, nvlsm).

``daemon.py NAME`` stays in the foreground until SIGTERM, and while it runs keeps its pid file
``/run/NAME/NAME.pid`` (where nvidia-persistenced keeps its own: /var/run/nvidia-persistenced/), which the
simulated nvidia-smi and nvidia-imex-ctl read to know whether it runs (``PROVISION_SIM_RUN_DIR``
moves /run, for tests). systemd starts it from the
package's unit (templates/unit.service.j2).
"""
import os
import signal
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    name = Path(argv[0]).name if argv else "daemon"
    pidfile = Path(os.environ.get("PROVISION_SIM_RUN_DIR", "/run")) / name / f"{name}.pid"
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    pidfile.write_text(f"{os.getpid()}\n")

    def stop(*_):
        pidfile.unlink(missing_ok=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
