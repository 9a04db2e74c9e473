"""GPUs the config asks for against what the nodes' workers can use: RLD907."""

from __future__ import annotations

from rldoctor.checks.preflight._plan import node_name, plan, section, shape, subject
from rldoctor.registry import check, fail, note

GPU_FIXES = {"Ray counts GPUs on a node that a worker cannot use": (
    "Make the GPUs visible to Ray's workers on that node: install the NVIDIA driver and a "
    "CUDA build of torch there (`torch.version.cuda` is {cuda}), and do not start the node "
    "with `--num-gpus` (or a `GPU` resource) where CUDA sees no device; or set "
    "`num_gpus_per_learner=0` to train on CPU on purpose.")}


@check("RLD907", "gpu-not-usable", area="preflight", lifecycle="preview", requires=("preflight", "nodes"),
       fixes=GPU_FIXES)
def gpu_not_usable(snap, params):
    """A learner (or env runner) asking for GPUs on a node whose GPUs Ray counts but a worker cannot use.

    Symptom:
        The learner runs far slower than expected and `nvidia-smi` shows no process (it
        trains on CPU), or it fails at start with `RuntimeError: No CUDA GPUs are available` /
        `Torch not compiled with CUDA enabled`, although Ray's dashboard lists the node's GPUs.

    Cause:
        Ray schedules on its `GPU` resource, which `ray start --num-gpus` (or a resource list)
        sets whether or not CUDA works there: a CPU-only build of torch, a missing or
        mismatched NVIDIA driver, or a container without the devices. Ray gives the learner
        `CUDA_VISIBLE_DEVICES`, and torch still counts no device.
    """
    settings = plan(snap).get("settings") or {}
    asks = max(float(settings.get("num_gpus_per_learner") or 0),
               float(settings.get("num_gpus_per_env_runner") or 0))
    if asks <= 0:
        return
    for node_id, view in sorted((section(snap).get("nodes") or {}).items()):
        node = snap.node(node_id) or {}
        counted = shape(node.get("resources_total")).get("GPU", 0.0)
        if counted <= 0:
            continue
        gpus = view.get("gpus") or {}
        seen = gpus.get("as_gpu_worker") or {}
        count = seen.get("count")
        if count is not None and count >= min(asks, counted) and seen.get("available"):
            continue
        if count is None and not seen.get("error"):
            continue
        if count is None and "timed out" in str(seen.get("error")).lower():
            # a probe that did not answer in time (a node busier than its cores) tells nothing
            # about its GPUs: not judged, never a finding
            yield note(subject(node_id), f"torch on {node_name(snap, node_id)} did not answer "
                       f"in time, so its GPUs were not judged: {seen.get('error')}", {"torch": seen})
            continue
        why = (f"torch {seen.get('torch')} (CUDA build {seen.get('cuda_build') or 'none'}) "
               f"counts {count} device(s) with CUDA_VISIBLE_DEVICES={seen.get('cuda_visible_devices')}"
               if count is not None else f"torch could not be asked: {seen.get('error')}")
        driver = gpus.get("driver") or "no NVIDIA driver found (/proc/driver/nvidia/version)"
        yield fail(subject(node_id), f"GPUs that Ray counts but a worker cannot use on "
                   f"{node_name(snap, node_id)}: Ray has GPU {counted:g}; {why}; a learner "
                   "placed there would fall back to CPU or fail",
                   {"ray_gpus": counted, "asks_per_learner": asks, "torch": seen,
                    "driver": driver, "nvidia_smi": gpus.get("nvidia_smi")},
                   GPU_FIXES["Ray counts GPUs on a node that a worker cannot use"].format(
                       cuda=seen.get("cuda_build") or "none"))
