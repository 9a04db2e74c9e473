"""The Training part of a report: the RLlib trainings found on the cluster, briefly.

Built from the snapshot's `training` section and the findings about it; the JSON report
carries it as the top-level `training` list, the table and Markdown reports as a short
block (one line per training, one per runner or learner that is not fine), written by
rldoctor.report.render.training.
"""

from __future__ import annotations

import os

from rldoctor import words



def _stuck_in(stack: dict | None) -> str | None:
    frames = (stack or {}).get("user_frames") or []
    if not frames:
        return None
    f = frames[-1] if len(frames) > 1 else frames[0]  # the user's outermost frame: env.step
    where = os.path.basename(f.get("file") or "") or "?"
    return f"{f.get('function')} ({where}{':' + str(f['line']) if f.get('line') is not None else ''})"


def _member(member: dict, stacks: dict) -> dict:
    call = member.get("call") or {}
    return {"actor_id": member.get("actor_id"), "role": member.get("role"),
            "class_name": member.get("class_name"), "node_id": member.get("node_id"),
            "node_ip": member.get("node_ip"), "pid": member.get("pid"),
            "state": member.get("state"), "num_restarts": member.get("num_restarts", 0),
            "call": call.get("name"), "call_age_s": call.get("age_s"),
            "queued_calls": member.get("queued_calls"),
            "steps_sampled": member.get("steps_sampled"), "steps_per_s": member.get("steps_per_s"),
            "stuck_in": _stuck_in(stacks.get(member.get("stack_id") or ""))}


def summarize(section: dict | None, findings=()) -> list[dict]:
    """One entry per training, with its runners and learners and what is wrong with them."""
    if not section:
        return []
    stacks = section.get("stacks") or {}
    long_call_s = section.get("long_call_s") or words.LONG_CALL_S  # what the collector judged by
    named: dict[str, list[str]] = {}
    for f in findings:
        named.setdefault(f.subject, []).append(f.code)
    out = []
    for training in section.get("trainings") or []:
        runners = [_member(m, stacks) for m in training.get("runners") or []]
        learners = [_member(m, stacks) for m in training.get("learners") or []]
        for m in runners + learners:
            m["findings"] = sorted(set(named.get(f"actor:{m['actor_id']}", [])))
        rates = [m["steps_per_s"] for m in runners if m["steps_per_s"] is not None]
        out.append({
            "subject": training.get("subject"), "algorithm": training.get("algorithm"),
            "env": training.get("env"), "identified_from": training.get("identified_from"),
            "identity_unknown": training.get("identity_unknown"), "job_id": training.get("job_id"),
            "placement_group_id": training.get("placement_group_id"),
            "runs_in": training.get("runs_in"),
            "entrypoint": (training.get("job") or {}).get("entrypoint"),
            "runners_configured": training.get("runners_configured"),
            "runners_alive": training.get("runners_alive"),
            "runners_restarting": training.get("runners_restarting"),
            "runners_dead": training.get("runners_dead"),
            "learners": len(learners), "env_steps_per_s": round(sum(rates), 1) if rates else None,
            "findings": sorted(set(named.get(training.get("subject"), []))),
            "runners": runners, "learner_actors": learners, "long_call_s": long_call_s})
    return out


def not_fine(member: dict, long_call_s: float | None = None) -> bool:
    """A member the short views show: with a finding, not alive, restarted, or in a call at
    least `long_call_s` old (its training's `long_call_s`, from the snapshot)."""
    return bool(member.get("findings")) or member.get("state") != "ALIVE" or \
        (member.get("call_age_s") or 0) >= (long_call_s or words.LONG_CALL_S) or \
        (member.get("num_restarts") or 0) > 0
