"""The entry point of the dashboard path's job: runs inside the cluster, with its own Ray.

    python -m rldoctor.job.main --timeout 30

The job's driver joins through RAY_ADDRESS (the job supervisor sets it to the cluster's
GCS), takes the same snapshot `rldoctor check --address HOST:PORT` takes on a node,
redacts it with the client's rules (rldoctor.redact, on the snapshot's JSON text, as the
client redacts what it writes), and prints it framed, gzip + base64, between two marker
lines, so the client can find it in the job's logs among whatever Ray prints. Then it waits
for the client's stop and deletes its own log file (rldoctor.job.log), so no copy
of the output stays on the head. Standard library and ray only.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import sys
import time

from rldoctor.job import FAILED, frame

def _process_age_s() -> float | None:
    """Seconds since this process started (the interpreter's start-up and imports)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return round(uptime - ticks / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, IndexError):
        return None


# Set by Ray's job supervisor for the driver: {"runtime_env": ..., "metadata": ...}.
JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def _probes_without_the_package() -> bool:
    """Keep the package off the runtime env this driver gives its actors; True when it did.

    The driver needs rldoctor's package (it is on its path already, through the job's
    `py_modules`), its probes do not: they travel by value (probes.register). An actor
    with a runtime env starts through Ray's runtime env agent and worker set-up script, a
    second interpreter start-up on every node; one without starts as any worker does. The
    job's metadata (its submission id) stays, so the driver is still listed under the job.
    Read before `import ray`, which reads the variable in `ray.init`.
    """
    raw = os.environ.get(JOB_CONFIG_ENV)
    if not raw:
        return False
    try:
        config = json.loads(raw)
        env = dict(config.get("runtime_env") or {})
    except (ValueError, AttributeError):
        return False
    if "py_modules" not in env:
        return False
    env.pop("py_modules")
    if not env.get("env_vars"):
        env.pop("env_vars", None)
    config["runtime_env"] = env
    os.environ[JOB_CONFIG_ENV] = json.dumps(config)
    return True


def _the_job(timeout_s: float, extras=()) -> dict:
    age = _process_age_s()
    wall = time.time()
    plain_probes = _probes_without_the_package()
    from rldoctor.cluster.session import collect_snapshot

    started = time.monotonic()
    doc = collect_snapshot(os.environ.get("RAY_ADDRESS") or "auto", timeout_s=timeout_s,
                           leave=False, extras=extras)
    import ray

    doc.setdefault("source", {})["collected_by"] = {
        "path": "dashboard job",
        "ray_version": getattr(ray, "__version__", None),
        "python_version": platform.python_version(),
        "seconds": round(time.monotonic() - started, 3),
        "process_age_at_start_s": age,
        "probes_without_runtime_env": plain_probes,
        "started_at": round(wall, 3),
    }
    return doc


def redacted_text(doc: dict, secret_sources=()) -> str:
    """The snapshot's JSON text with secrets masked: what the client's `redact` makes of it
    before it writes a snapshot or report, done here so that no copy of the job's output
    (its log file, should one survive) holds a secret."""
    from rldoctor.redact import Redactor

    # Learn the snapshot's own secrets first (env_vars values of runtime_envs, secret-looking
    # config values), as the client's bundle does: once masked here the client cannot learn
    # them, so a copy elsewhere in the snapshot (a driver's command line in the jobs section)
    # must be masked here too.
    redactor = Redactor()
    redactor.learn(secret_sources)  # what the bundle's gatherer read (the actors' runtime_envs)
    redactor.learn(doc)
    return redactor.text(json.dumps(doc, default=str))


def _failure_line(exc: BaseException) -> str:
    from rldoctor.words import first_line

    line = f"{FAILED}{first_line(exc, 400)}"
    try:
        from rldoctor.redact import redact

        return redact(line)
    except Exception:
        return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rldoctor.job.main")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--bundle-max-bytes", type=int, default=None,
                        help="also gather the incident bundle's items (rldoctor.job.bundle)")
    parser.add_argument("--linger", type=float, default=0.0,
                        help="after printing: seconds to wait for the client's stop before "
                             "the driver deletes its own log file")
    parser.add_argument("--since-s", type=float, default=None,
                        help="how far back ended jobs count (check --since)")
    parser.add_argument("--preflight-plan", default=None,
                        help="also try a training's plan on every node (rldoctor preflight)")
    args = parser.parse_args(argv)
    from rldoctor.job import log as job_log

    if args.since_s:
        from rldoctor.cluster import jobs

        jobs.set_window(args.since_s)

    job_log.wipe_on_stop()
    gatherer = None
    try:
        if args.bundle_max_bytes:
            from rldoctor.job import bundle as job_bundle

            gatherer = job_bundle.new_gatherer()
        extras = (gatherer,) if gatherer else ()
        if args.preflight_plan:
            from rldoctor.cluster.preflight import Preflight

            extras += (Preflight(json.loads(base64.b64decode(args.preflight_plan))),)
        doc = _the_job(args.timeout, extras=extras)
        text = frame(redacted_text(doc, gatherer.secret_sources if gatherer else ()))
    except (SystemExit, KeyboardInterrupt):  # stopped while collecting (ray.init's own
        job_log.wipe_own_log()                # SIGTERM handler exits): nothing to print
        return 143
    except BaseException as exc:  # one line the client quotes, redacted too
        print(_failure_line(exc), flush=True)
        job_log.linger_then_wipe(args.linger)
        return 1
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if gatherer is not None:  # learns its secrets from the snapshot as collected
        job_bundle.send_items(gatherer, doc, args.bundle_max_bytes)
    job_log.linger_then_wipe(args.linger)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the probes are gone; skip Ray's exit handlers
