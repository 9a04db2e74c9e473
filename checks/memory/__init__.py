"""Checks of the memory area (RLD3xx): object store, spilling, host memory and /dev/shm (pressure), file systems (disk)."""
