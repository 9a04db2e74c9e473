"""The storage path every trial writes to: RLD904."""

from __future__ import annotations

from rldoctor.checks.preflight._plan import node_name, plan, section, subject
from rldoctor.registry import check, fail

STORAGE_FIXES = {
    "the path is another directory on some nodes (a local path)": (
        "Set `storage_path` (`tune.RunConfig(storage_path=...)`) to a directory every node "
        "mounts, the same file system under the same path (NFS, a shared volume), or to "
        "cloud storage (`s3://...`, `gs://...`). Do not pre-create Tune's marker file on "
        "each node: that silences the check and splits the checkpoints."),
    "a node cannot write the path": (
        "Make `{path}` writable for the user Ray runs as on that node (or choose "
        "another `storage_path`): Tune raises `Unable to set up cluster storage` "
        "there."),
}
_LOCAL = "the path is another directory on some nodes (a local path)"


@check("RLD904", "storage-not-shared", area="preflight", lifecycle="preview", requires=("preflight",),
       fixes=STORAGE_FIXES)
def storage_not_shared(snap, params):
    """A storage_path that is not one shared directory for every node, or that a node cannot write.

    Symptom:
        A trial on a worker node fails at start with `RuntimeError: Unable to set up cluster
        storage ... Check that all nodes in the cluster have read/write access to the
        configured storage path`, or checkpoints end up split over the nodes' own disks and
        `Algorithm.from_checkpoint()` finds none after a node is gone.

    Cause:
        Since Ray 2.7 Tune writes checkpoints and results straight to `storage_path` from the
        node where each trial runs, and checks that a marker written by the driver can be read
        there. A local path (`~/ray_results`, `/tmp/...`), a tmpfs, or a mount that exists on
        some nodes only is a different directory on each node.
    """
    sect = section(snap)
    storage = plan(snap).get("storage") or {}
    path = storage.get("path")
    if not path or storage.get("uri"):
        return
    views = {n: v.get("storage") for n, v in (sect.get("nodes") or {}).items() if v.get("storage")}
    for node_id, view in sorted(views.items()):
        if not view.get("written"):
            yield fail(subject(node_id), f"storage_path {path} is not writable on "
                       f"{node_name(snap, node_id)}: {view.get('error')}",
                       {"path": path, "error": view.get("error"), "fs_type": view.get("fs_type")},
                       STORAGE_FIXES["a node cannot write the path"].format(path=path))
    seen = sect.get("storage_seen") or {}
    writers = sorted(n for n, v in views.items() if v.get("written"))
    if len(writers) < 2 or not seen:
        return
    groups = _groups_by_what_they_see(writers, seen)
    if len(groups) < 2 and all(len(k) == len(writers) for k in groups):
        return
    largest = max(groups.values(), key=len)
    if len(largest) == 1:  # every node sees only its own marker: a local path everywhere
        kinds = sorted({f"{views[n].get('fs_type') or '?'} at {views[n].get('mount_point') or '?'}"
                        for n in writers})
        yield fail("cluster", f"storage_path {path} is a different directory on each of the "
                   f"{len(writers)} nodes ({'; '.join(kinds)}): no node sees a marker written "
                   "on another", {"path": path, "nodes": [n[:8] for n in writers]}, STORAGE_FIXES[_LOCAL].format())
        return
    for node_id in writers:
        if node_id in largest:
            continue
        view = views[node_id]
        yield fail(subject(node_id), f"storage_path {path} on {node_name(snap, node_id)} is "
                   f"not the directory the other nodes see ({view.get('fs_type') or '?'} at "
                   f"{view.get('mount_point') or '?'}): markers written on "
                   f"{len(largest)} other node(s) are not there",
                   {"path": path, "fs_type": view.get("fs_type"),
                    "mount_point": view.get("mount_point"),
                    "shared_by": [n[:8] for n in largest],
                    "sees_markers_of": [n[:8] for n in seen.get(node_id, [])]}, STORAGE_FIXES[_LOCAL].format())


def _groups_by_what_they_see(writers: list[str], seen: dict) -> dict[tuple, list[str]]:
    """The writing nodes grouped by the markers (of writers) each one sees."""
    groups: dict[tuple, list[str]] = {}
    for node_id in writers:
        groups.setdefault(tuple(n for n in seen.get(node_id, []) if n in writers), []).append(node_id)
    return groups
