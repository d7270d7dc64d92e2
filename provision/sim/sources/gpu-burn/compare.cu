/* Simulated gpu-burn source (provision/sim/sources.py): stands for the compare kernel. */
