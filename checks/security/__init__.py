"""Checks of the security area (RLD7xx): token authentication and exposed Ray ports (exposure)."""
