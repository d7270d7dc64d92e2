"""Orchestration transports: ansible-runner for installs, SSH for burn-in commands."""
