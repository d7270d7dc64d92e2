"""The simulated rack: real nodes (own root, hostname, sshd) on this machine, simulated GPUs and HCAs."""
