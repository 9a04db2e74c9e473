"""The snapshot document as the collectors start it: its schema, its first fields, and the
sections a live collection leaves to other inputs. Shipped to the cluster (the dashboard path's
job writes the document there); reading and judging a document is rldoctor.snapshot's, on the
client."""

from __future__ import annotations

from typing import Any

SCHEMA = "rldoctor.snapshot/v1"
SCHEMA_NAME = "rldoctor.snapshot"
SCHEMA_MAJOR = 1


def new_document(source: dict[str, Any]) -> dict[str, Any]:
    from datetime import datetime, timezone

    from rldoctor import __version__

    return {
        "schema": SCHEMA,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "rldoctor_version": __version__,
        "source": source,
        "collectors": {},
    }


# Sections a live `check` does not collect, and what fills them instead (the collectors mark
# them skipped with this reason; the report's "skipped" part and `collect` read it too).
NOT_FROM_A_LIVE_CLUSTER = {
    "targets": "give --target MODULE:ATTR to check your env, callbacks or config",
    "smoke": "run `rldoctor smoke-train` to train on the cluster",
    "scaling": "run `rldoctor smoke-train --scaling 1,2,4` to measure scaling",
    "runs": "give --run PATH (a Tune trial or experiment directory) to judge a run's results",
}
