#!/usr/bin/python3
"""A simulated GPU-stack daemon (nvidia-persistenced, nv-fabricmanager, nv-hostengine).

Stays in the foreground until SIGTERM; the init script records its PID, which the simulated
nvidia-smi reads to report persistence mode.
"""
import signal
import sys
import time


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
