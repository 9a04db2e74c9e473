"""The incident bundle: one redacted gzip tar an on-call engineer can attach to a ticket.

    rldoctor collect --bundle incident.tar.gz     # write it (build.py; gather.py reads through Ray)
    rldoctor check --from incident.tar.gz         # diagnose it anywhere (reader.py; no ray, no torch)

Layout (one top folder, `rldoctor-bundle-<UTC time>/`):

    manifest.json                 schema rldoctor.bundle/v1: every item, collected or not, with
                                  its status, error, duration and size; nodes; redaction counts
    snapshot.json                 the snapshot (rldoctor.snapshot/v1), redacted
    report.json, report.md        the report of the same run
    cluster/jobs.json             jobs with their drivers (runtime_env env_vars masked)
    cluster/running_tasks.json    calls running now, with their age
    nodes/<node id>/host.json     kernel, CPUs, memory and cgroup limit, /dev/shm, disks, versions
    nodes/<node id>/logs/...      tails of raylet, GCS (head), dashboard and agent logs, and the
                                  .err/.out of workers that died recently (logs/workers/)
    nodes/<node id>/stacks.json   py-spy stacks of the RLlib processes and of long calls, parsed,
    nodes/<node id>/stacks/<pid>.txt  and as py-spy printed them
    tune/<trial>/result.json      the last rows of each running Tune trial, config cut to the
                                  training settings

Secrets never enter it: everything passes through rldoctor.redact.Redactor before it is
written (see there for what is masked).

    build.py          `collect --bundle`: gather, diagnose, assemble, write
    assemble.py       from what was gathered to the bundle's files, redacted
    manifest.py       the bundle's items and manifest (shared with the cluster side)
    writer.py         the members and the size cap, `fit` (shared with the cluster side)
    target.py         the target file: a temp file beside it, renamed when complete
    reader.py         reading a bundle back (`check --from`), no ray
    obfuscate.py      `--obfuscate`: node ids, IPs and host names replaced consistently
    evidence.py       findings read from a bundle point at the bundle's own logs and stacks
"""

SCHEMA = "rldoctor.bundle/v1"
SCHEMA_NAME = "rldoctor.bundle"
SCHEMA_MAJOR = 1
MANIFEST = "manifest.json"
SNAPSHOT = "snapshot.json"
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
DEFAULT_MAX_BYTES = 50 * 10**6


def node_dir(node_id: str) -> str:
    return f"nodes/{node_id}"
