#!/usr/bin/python3
"""A simulated node's reboot: a new boot id, the reboot-required marker cleared, services stopped.

Simulated nodes share this machine's kernel, so nothing can really restart; what Ansible's reboot
module observes (the boot id changes, the node answers again) is what a reboot shows it.
"""
import os
import subprocess
import uuid
from pathlib import Path

BOOT_ID = Path("/var/lib/provision-sim/boot_id")


def main() -> int:
    BOOT_ID.parent.mkdir(parents=True, exist_ok=True)
    BOOT_ID.write_text(str(uuid.uuid4()) + "\n")
    Path("/run/reboot-required").unlink(missing_ok=True)
    Path("/run/provision-reboot-required").unlink(missing_ok=True)
    for script in sorted(Path("/etc/init.d").glob("nvidia-*")):
        subprocess.run([str(script), "stop"], capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    raise SystemExit(main())
