"""Resource arithmetic shared by the checks: does a demand fit a node?"""

from __future__ import annotations

from typing import Iterable, Mapping

from rldoctor.snapshot import dig
from rldoctor.words import size

_EPS = 1e-9


def fits(demand: Mapping[str, float], offer: Mapping[str, float]) -> bool:
    return all(offer.get(k, 0.0) + _EPS >= v for k, v in demand.items() if v > 0)


def missing(demand: Mapping[str, float], offer: Mapping[str, float]) -> dict[str, float]:
    """The part of `demand` that `offer` cannot cover, per resource."""
    return {k: v - offer.get(k, 0.0) for k, v in demand.items() if offer.get(k, 0.0) + _EPS < v}


def add(shapes: Iterable[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for shape in shapes:
        for k, v in shape.items():
            total[k] = total.get(k, 0.0) + v
    return total


def show(shape: Mapping[str, float]) -> str:
    """{'CPU': 1.0, 'memory': 2147483648} -> 'CPU: 1, memory: 2.0 GiB'"""
    parts = []
    for key in sorted(k for k in shape if not k.startswith("node:")):
        value = shape[key]
        if key in ("memory", "object_store_memory"):
            parts.append(f"{key}: {size(value, 'GiB')}")
        else:
            parts.append(f"{key}: {value:g}")
    return ", ".join(parts)


DEFAULT_KILL_THRESHOLD = 0.95  # Ray's RAY_memory_usage_threshold default


def kill_threshold_in_force(host: Mapping | None) -> tuple[float, str]:
    """The memory fraction at which Ray's monitor kills workers on a node, and its source.

    Read from the environment the node's raylet gave its workers (the probe reports it).
    """
    raw = dig(host, "memory_monitor", "RAY_memory_usage_threshold")
    try:
        return float(raw), "RAY_memory_usage_threshold on that node"
    except (TypeError, ValueError):
        return DEFAULT_KILL_THRESHOLD, "Ray's default"
