"""Checks of the serialization area (RLD5xx): what RLlib ships to every env runner (shipping)."""
