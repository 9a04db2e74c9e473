"""One problem a cluster-file rule found: its severity, where (a JSON pointer), what and the fix."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Problem:
    severity: str
    pointer: str
    message: str
    fix: str
    replacement: str = ""
    evidence: dict = field(default_factory=dict)
