#!/usr/bin/python3
"""A simulated GPU-stack daemon (nvidia-persistenced, nv-fabricmanager, nv-hostengine, nvidia-imex, nvlsm).

``daemon.py NAME`` stays in the foreground until SIGTERM, and while it runs keeps its pid file
``/run/NAME/NAME.pid`` (where nvidia-persistenced keeps its own: /var/run/nvidia-persistenced/), which the
simulated nvidia-smi and nvidia-imex-ctl read to know whether it runs (``PROVISION_SIM_RUN_DIR``
moves /run, for tests). systemd starts it from the package's unit (templates/unit.service.j2).

As ``nvidia-imex`` it also listens where the real daemon does, on TCP at this node's IMEX address and the
configured SERVER_PORT (default 50000; NVIDIA IMEX guide, "IMEX Service Config Options",
https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/config.html; ``imexdomain``), reading the files
once at start as the real one does: its peers' nvidia-imex-ctl, all_reduce_perf and mnubergemm connect there to
learn whether it runs. It accepts and closes each connection (no IMEX protocol is simulated). A node whose
address is in no nodes_config.cfg line listens nowhere.
"""
import os
import signal
import socket
import sys
import time
from pathlib import Path

for _path in ("/usr/lib/provision-sim", os.path.dirname(os.path.abspath(__file__))):
    if _path not in sys.path:
        sys.path.insert(0, _path)

IMEX = "nvidia-imex"


def imex_listener() -> socket.socket | None:
    """The IMEX daemon's listening socket on this node's address, or None where it has none."""
    import imexdomain
    import simhw

    try:
        model = simhw.load() or {}
    except OSError:
        model = {}
    address = imexdomain.own_address(model)
    if address is None:
        return None
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart must not wait out TIME_WAIT
    server.bind((address, imexdomain.server_port()))
    server.listen(64)
    return server


def main(argv: list[str]) -> int:
    name = Path(argv[0]).name if argv else "daemon"
    pidfile = Path(os.environ.get("PROVISION_SIM_RUN_DIR", "/run")) / name / f"{name}.pid"
    server = imex_listener() if name == IMEX else None
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    pidfile.write_text(f"{os.getpid()}\n")

    def stop(*_):
        pidfile.unlink(missing_ok=True)
        if server is not None:
            server.close()
        os._exit(0)  # noqa: SLF001 - leave at once, from inside accept()

    signal.signal(signal.SIGTERM, stop)
    while server is not None:
        conn, _ = server.accept()
        conn.close()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
