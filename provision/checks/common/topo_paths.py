"""The path types of ``nvidia-smi topo -m``'s GPU-NIC cells, nearest first, as its legend orders them: PIX < PXB <
PHB < NODE < SYS (SOC is the pre-2017 name of SYS). topology judges each GPU's nearest NIC by them, gpudirect pairs
each HCA with its nearest GPU.
"""
from __future__ import annotations

PATH_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}
