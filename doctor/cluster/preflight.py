"""The snapshot section `preflight`: the user's training tried on every node before it is submitted.

Called as an extra of the snapshot (`Preflight(plan)(conn, budget, fleet, doc)`, while joined;
or inside the collectors' job through a dashboard address, `job_args` / `through_job`). Every
probe is a zero-CPU task pinned to one node, in the runtime_env the job would have; each
round is bounded, what does not answer is cancelled, and the storage markers are removed.

    {"plan": {...the plan without the pickled env...},
     "nodes": {node_id: {"packages": {...}, "env": {"ok": bool, "stage", "error"},
                         "storage": {"written", "fs_type", "mount_point", ...},
                         "gpus": {...}, "failed": "<why the probe did not answer>"}},
     "storage_seen": {node_id: [node ids whose marker it sees]},
     "contract": {...env_contract on one node...}, "contract_node": node_id,
     "seconds": {...}}
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from types import SimpleNamespace

SECTION = "preflight"
# Each round has its own bound, apart from the snapshot's --timeout: a node's first worker in a
# new runtime_env may install packages, and on a busy host a worker takes seconds to start.
ROUND_TIMEOUT_S = 60.0
QUICK_TIMEOUT_S = 15.0


def public_plan(plan: dict) -> dict:
    """The plan as the report shows it: without the pickled env."""
    shown = json.loads(json.dumps(plan, default=str))
    (shown.get("env") or {}).pop("payload", None)
    return shown


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # Ray's errors put the cause last; the runtime_env's first
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return f"{type(exc).__name__}: {line}"[:400]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:400]


class Preflight:
    """The extra that fills `preflight` in the snapshot document."""

    __name__ = "preflight"
    # What a preflight reports besides its own section (rldoctor.commands.preflight): the
    # snapshot collects these and what they need, not the jobs, actors or round trips.
    sections = ("nodes", "hosts", "versions", "autoscaler")

    def __init__(self, plan):
        """`plan`: the plan (a dict), or what gives it (rldoctor.inputs.training.PlanLoader)."""
        self._plan = plan

    @property
    def plan(self) -> dict:
        return self._plan if isinstance(self._plan, dict) else self._plan.get()

    # ------------------------------------------------------------------ the dashboard path
    def job_args(self) -> str:
        encoded = base64.b64encode(json.dumps(self.plan).encode()).decode()
        return f" --preflight-plan {encoded}"

    def through_job(self, job) -> dict:
        return job.snapshot(job.output())

    # ------------------------------------------------------------------ the GCS path
    def __call__(self, conn, budget, fleet, doc) -> None:
        started = time.monotonic()
        try:
            section = self.collect(doc, budget, fleet)
            doc[SECTION] = section
            doc.setdefault("collectors", {})[SECTION] = {
                "status": "ok", "duration_s": round(time.monotonic() - started, 3)}
        except Exception as exc:
            doc.setdefault("collectors", {})[SECTION] = {
                "status": "error", "error": _error_line(exc),
                "duration_s": round(time.monotonic() - started, 3)}

    def collect(self, doc: dict, budget=None, fleet=None) -> dict:
        import ray

        from rldoctor.node import preflight as onnode
        from rldoctor.node.placement import on_node

        onnode.register()
        plan = dict(self.plan)
        storage = dict(plan.get("storage") or {})
        if storage.get("path") and not storage.get("uri"):
            storage.update(local_path=storage["path"], token=uuid.uuid4().hex[:12])
        plan["storage"] = storage
        nodes = [n["node_id"] for n in doc.get("nodes") or [] if n.get("alive")]
        options = {"num_cpus": 0, "max_retries": 0}
        if plan.get("runtime_env"):
            options["runtime_env"] = plan["runtime_env"]
        timing: dict = {}
        section: dict = {"plan": public_plan(plan), "nodes": {}, "storage_seen": {},
                         "contract": None, "contract_node": None, "seconds": timing}

        # With no runtime_env of its own the job's workers have the node's own environment,
        # which the probe fleet's actors (one per node, already started) have too: they run the
        # reads, and no worker has to start. A runtime_env gets zero-CPU tasks started in it.
        through_fleet = not plan.get("runtime_env") and fleet is not None and \
            all(n in (getattr(fleet, "actors", None) or {}) for n in nodes)
        section["through"] = "probes" if through_fleet else "tasks in the job's runtime_env"

        if through_fleet:
            probes = fleet
        else:  # one zero-CPU task per call, pinned, in the runtime_env: a stand-in fleet
            runner = ray.remote(**options)(onnode.run_here)
            probes = SimpleNamespace(failed={}, actors={
                n: SimpleNamespace(call_here=on_node(runner, n)) for n in nodes})

        def run_round(calls: dict, timeout_s: float) -> dict:
            """{key: (node, func, *args)} -> {key: ("ok", value) | ("failed", why)}, bounded
            (rldoctor.cluster.fleet.ask: what does not answer in time is cancelled)."""
            from rldoctor.cluster.fleet import ask

            answers = ask(probes, {k: (node, "call_here", func, *args)
                                   for k, (node, func, *args) in calls.items()}, timeout_s)
            return {k: ("ok", a.value) if a.ok else ("failed", a.error or a.kind)
                    for k, a in answers.items()}

        limit = ROUND_TIMEOUT_S
        t0 = time.monotonic()
        first = run_round({n: (n, onnode.node_view, plan, n) for n in nodes}, limit)
        timing["nodes_s"] = round(time.monotonic() - t0, 3)
        answered = []
        for node, (state, value) in first.items():
            if state == "ok":
                section["nodes"][node] = value
                answered.append(node)
            else:
                section["nodes"][node] = {"node_id": node, "failed": value}
        written = [n for n in answered if (section["nodes"][n].get("storage") or {}).get("written")]
        t0 = time.monotonic()
        if storage.get("local_path") and written:
            listed = run_round({n: (n, onnode.storage_seen, storage["local_path"], storage["token"])
                                for n in answered}, QUICK_TIMEOUT_S)
            section["storage_seen"] = {n: v for n, (s, v) in listed.items() if s == "ok"}
        timing["storage_s"] = round(time.monotonic() - t0, 3)
        t0 = time.monotonic()
        calls = {}
        ok_env = [n for n in answered if (section["nodes"][n].get("env") or {}).get("ok")]
        if ok_env:
            contract_node = self._contract_node(ok_env, doc)
            section["contract_node"] = contract_node
            calls["contract"] = (contract_node, onnode.env_contract, plan)
        if storage.get("local_path"):
            for n in answered:
                calls[f"cleanup:{n}"] = (n, onnode.storage_cleanup, storage["local_path"],
                                         storage["token"], n, False)
        if calls:
            done = run_round(calls, QUICK_TIMEOUT_S + 15.0)
            if "contract" in done:
                state, value = done["contract"]
                section["contract"] = value if state == "ok" else {"ok": False, "stage": "probe",
                                                                     "error": value}
        creators = [n for n in answered if (section["nodes"][n].get("storage") or {}).get("created")]
        if storage.get("local_path") and creators:  # the folders it made, once emptied
            run_round({n: (n, onnode.storage_cleanup, storage["local_path"], storage["token"], n,
                           True) for n in creators}, QUICK_TIMEOUT_S)
        timing["contract_s"] = round(time.monotonic() - t0, 3)
        return section

    @staticmethod
    def _contract_node(candidates: list[str], doc: dict) -> str:
        """A node where an env runner could land, the one with the most free CPUs first."""
        free = {n["node_id"]: (n.get("resources_available") or {}).get("CPU", 0.0)
                for n in doc.get("nodes") or []}
        return max(candidates, key=lambda n: free.get(n, 0.0))
