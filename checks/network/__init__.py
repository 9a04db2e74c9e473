"""Checks of the network area (RLD2xx): latency, object transfer, zone spread and closed ports between nodes (links)."""
