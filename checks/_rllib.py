"""What RLlib's actors are called, and how Ray words its worker deaths."""

from __future__ import annotations

import re
from datetime import datetime

from rldoctor.rllib_roles import rllib_role


def describe_actor(actor: dict) -> str:
    role = rllib_role(actor.get("class_name"))
    label = f"RLlib {role} {actor['class_name']}" if role else f"actor {actor['class_name']}"
    if actor.get("name"):
        label += f" '{actor['name']}'"
    return label


_OOM_NODE = re.compile(r"Memory on the node \(IP: ([^,]+), ID: ([0-9a-f]+)\) was ([\d.]+)GB used / "
                       r"([\d.]+)GB limit \(([\d.]+)\)")
_OOM_THRESHOLD = re.compile(r"exceeded threshold of (\d+)B \(([\d.]+)% of (\d+)B limit\)")
_OOM_OLD_THRESHOLD = re.compile(r"exceeds the memory usage threshold of ([\d.]+)")
_TASK_NAME = re.compile(r"task name=([^,]+), required resources")


def parse_oom(text: str) -> dict:
    """Figures from Ray's memory monitor message: used and limit GB, fraction, threshold."""
    out: dict = {}
    m = _OOM_NODE.search(text or "")
    if m:
        out.update(ip=m.group(1), node_id=m.group(2), used_gb=float(m.group(3)),
                   limit_gb=float(m.group(4)), used_fraction=float(m.group(5)))
    m = _OOM_THRESHOLD.search(text or "")
    if m:
        out.update(threshold_bytes=int(m.group(1)), threshold_fraction=float(m.group(2)) / 100)
    else:
        m = _OOM_OLD_THRESHOLD.search(text or "")
        if m:
            out["threshold_fraction"] = float(m.group(1))
    m = _TASK_NAME.search(text or "")
    if m:
        out["task_name"] = m.group(1)
    return out


def crash_kind(detail: str) -> str:
    """A short human reading of a SYSTEM_ERROR exit detail."""
    text = detail or ""
    for signal in ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE", "SIGTERM", "SIGKILL"):
        if any(f"{how}{signal}" in text for how in ("signal ", "killed by ", "receives a ")) or \
                f"{signal})" in text:
            return signal
    if "connection error code 2" in text or "End of file" in text:
        return "exited without notice (SIGKILL, kernel OOM kill, segfault or os._exit)"
    if "exit code" in text.lower():
        return "exited with an error code"
    return "died of a system error"


def age_hours(end_time_ms: int | None, created_at: str | None) -> float | None:
    """How long before the snapshot something happened, in hours."""
    if not end_time_ms or not created_at:
        return None
    try:
        snap_ms = datetime.fromisoformat(created_at).timestamp() * 1000
    except ValueError:
        return None
    return max(0.0, (snap_ms - end_time_ms) / 3_600_000)
