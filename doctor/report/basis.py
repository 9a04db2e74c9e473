"""What the input let a report judge (JSON `verdict_basis`), so that a report over nothing read
never says OK.

A report is judged when its input held something a verdict can stand on. It is not when:
- every selected check was skipped (a snapshot that holds only `{"schema": ...}`);
- a session directory gave no node (the head's logs unreadable, only empty worker files);
- the --run files hold no row of a training's results (not a Tune result file of RLlib).
A report that is not judged says so in its status line (NOT JUDGED, JSON `summary.status`
"error") and `check` exits 3 (nothing could be diagnosed), with one line on stderr. Findings,
when there are any, are a verdict: the report is then judged, whatever it lacked.
"""

from __future__ import annotations


def build(snap, results, active_findings) -> dict:
    ran = [r for r in results if r.status != "skipped"]
    kind = (snap.get("source") or {}).get("kind")
    read = _what_was_read(snap, kind)
    why = None
    if results and not ran:
        why = ("every check was skipped: the input holds none of the sections the checks need"
               + (" (the snapshot holds no section, only its schema)" if not _sections(snap) else ""))
    elif kind == "logs" and not snap.nodes:
        why = f"no node was read from the logs in {_where(snap)}: {_logs_problem(snap)}"
    elif kind == "runs" and snap.get("runs") is not None and not any(r.get("points") for r in snap["runs"]):
        why = _runs_problem(snap["runs"])
    judged = why is None or bool(active_findings)
    return {"judged": judged, "checks_judged": len(ran), "checks_skipped": len(results) - len(ran),
            "read": read, "why_not": None if judged else why,
            "lacking": why if (why and judged) else None}


def _sections(snap) -> list[str]:
    return [k for k, v in snap.data.items()
            if k not in ("schema", "created_at", "rldoctor_version", "source", "collectors", "notes")
            and v not in (None, {}, [])]


def _what_was_read(snap, kind) -> str:
    parts = []
    if snap.has("nodes"):
        parts.append(f"{len(snap.nodes)} node(s)")
    jobs = (snap.get("jobs") or {}).get("jobs")
    if jobs is not None:
        parts.append(f"{len(jobs)} job(s)")
    if snap.has("runs"):
        runs = snap["runs"]
        parts.append(f"{len(runs)} run(s), {sum(len(r.get('points') or []) for r in runs)} "
                     "iteration(s) of RLlib results")
    if snap.has("targets"):
        parts.append(f"{len(snap['targets'] or [])} target(s)")
    if not parts:
        parts.append(f"{len(_sections(snap))} section(s)")
    return f"{kind or 'input'}: " + ", ".join(parts)


def _where(snap) -> str:
    src = snap.get("source") or {}
    return str(src.get("path") or src.get("file") or "the directory")


def _logs_problem(snap) -> str:
    logs = snap.get("logs") or {}
    problems = [p for p in logs.get("problems") or [] if isinstance(p, dict)]
    text = (f"{logs.get('files', 0)} file(s) found, {logs.get('bytes_read', 0)} byte(s) read, and no "
            "gcs_server.out or raylet.out said which nodes there were")
    if problems:
        first = problems[0]
        text += (f" ({len(problems)} file(s) not read whole, the first "
                 f"{str(first.get('file')).rsplit('/', 1)[-1]}: {first.get('problem')})")
    return text + "; give the head's session directory, readable by this user"


def _runs_problem(runs: list[dict]) -> str:
    files = ", ".join(str(r.get("file") or r.get("path")) for r in runs[:3])
    rows = sum(int(r.get("rows_read") or 0) for r in runs)
    return (f"--run {files}: no row of an RLlib training's results ({rows} row(s) read, "
            f"{sum(int(r.get('not_rllib_rows') or 0) for r in runs)} not of RLlib): not a "
            "training's result.json, or one that has no iteration yet")
