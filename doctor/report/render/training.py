"""The Training part of a report as text: a line per training, an indented line per runner
or learner that is not fine (the part itself: rldoctor.report.training)."""

from __future__ import annotations

from rldoctor.report.training import not_fine
from rldoctor.words import node_label


def headline(t: dict) -> str:
    """`PPO (CartPole-v1) job 02000000, in its driver: 1/2 env runners alive, 0 learners, 210 steps/s`."""
    what = t.get("algorithm") or "RLlib training"
    if t.get("env"):
        what += f" ({t['env']})"
    where = "in its own actor" if t.get("runs_in") == "actor" else "in the driver"
    runners = f"{t.get('runners_alive', 0)}/{t.get('runners_configured') or 0} env runners alive"
    if t.get("runners_restarting"):
        runners += f", {t['runners_restarting']} restarting"
    rate = f", {t['env_steps_per_s']:.0f} env steps/s" if t.get("env_steps_per_s") else ""
    flags = f"  [{', '.join(t['findings'])}]" if t.get("findings") else ""
    return (f"{t.get('subject')}: {what}, job {t.get('job_id')} {where}: {runners}, "
            f"{t.get('learners', 0)} learner(s){rate}{flags}")


def member_line(m: dict) -> str:
    parts = [f"{m.get('role')} {str(m.get('actor_id'))[:12]} pid {m.get('pid')} on "
             f"{node_label(m.get('node_id'), m.get('node_ip'))}", str(m.get("state")).lower()]
    if m.get("num_restarts"):
        parts.append(f"{m['num_restarts']} restart(s)")
    if m.get("call_age_s") is not None:
        parts.append(f"in {m.get('call')} for {m['call_age_s']:.0f} s")
    if m.get("stuck_in"):
        parts.append(f"stuck in {m['stuck_in']}")
    if m.get("steps_per_s") is not None:
        parts.append(f"{m['steps_per_s']:.1f} steps/s")
    if m.get("findings"):
        parts.append(f"[{', '.join(m['findings'])}]")
    return ", ".join(parts)


def block_lines(trainings: list[dict]) -> list[str]:
    """The short text block: a line per training, an indented line per member not fine."""
    lines = []
    for t in trainings:
        lines.append(headline(t))
        for m in t.get("runners", []) + t.get("learner_actors", []):
            if not_fine(m, t.get("long_call_s")):
                lines.append("    " + member_line(m))
    return lines
