/* Simulated gpu-burn source (provision/sim/sources.py): stands for the CUDA driver program. */
