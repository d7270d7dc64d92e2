#!/usr/bin/python3
"""Simulated ``nvcc --version``: the CUDA toolkit version from the package's version.json."""
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    info = json.loads((Path(__file__).resolve().parent.parent / "version.json").read_text())
    # Real nvcc prints its own version (V12.4.131 in toolkit 12.4.1): version.json's cuda_nvcc.
    major_minor = ".".join(info["cuda"]["version"].split(".")[:2])
    version = info.get("cuda_nvcc", info["cuda"])["version"]
    print("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation")
    print(f"Cuda compilation tools, release {major_minor}, V{version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
