"""The devices of a simulated node's hardware model that a fault names (``--device``): a GPU by index, an HCA by
name. Raises ProvisionError (one line, the device cut to 40 characters) for one the model lacks."""
from __future__ import annotations

from provision.errors import ProvisionError


def gpu(model: dict, device: str) -> dict:
    """The model's GPU of index ``device``."""
    try:
        return next(g for g in model["gpus"] if g["index"] == int(device))
    except (StopIteration, ValueError):
        raise ProvisionError(f"--device {device[:40]!r}: no such GPU index (0..{len(model['gpus']) - 1})") from None


def hca(model: dict, device: str) -> dict:
    """The model's HCA named ``device`` (mlx5_N)."""
    found = next((h for h in model.get("hcas") or [] if h["name"] == device), None)
    if found is None:
        names = ", ".join(h["name"] for h in model.get("hcas") or [])
        raise ProvisionError(f"--device {device[:40]!r}: no such HCA ({names or 'none'})")
    return found
