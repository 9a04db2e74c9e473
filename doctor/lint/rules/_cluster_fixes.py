"""RLD802's fix texts, by case: the table its check declares (`@check(..., fixes=FIXES)`) and
the rules that find its problems (rldoctor.lint.rules._cluster_config, _kuberay, _ray_start)
fill in. Data only, so the check loads it for nothing and the rules import it without a circle."""

FIXES = {
    "setup_commands pin another Ray than the client's": (
        "pin the Ray the client runs: `{fixed}` (quote the requirement: shells such as zsh "
        "expand the brackets)"),
    "setup_commands install another Ray's wheel": "install Ray {ray_version} on the nodes",
    "the image's tag floats": "pin the image: `rayproject/ray:{ray_version}`",
    "the image runs another Ray than the client's": "use `rayproject/ray:{ray_version}`",
    "`pip install` names no Ray version": "pin the Ray the client runs: `{fixed}`",
    "max_workers is above the machines listed on premise": (
        "`max_workers: {n}`, or list {more} more machine(s) in provider.worker_ips"),
    "max_workers is below the machines listed on premise": (
        "`max_workers: {n}`, or remove the machines you do not want"),
    "min_workers is above the machines listed on premise": "`min_workers: {n}`",
    "the head is listed in worker_ips": "remove the head's address from worker_ips",
    "a machine is listed twice": "list each machine once",
    "a node type's min_workers is above its max_workers": "`min_workers: {high}` (or raise max_workers)",
    "the node types' min_workers add up to more than max_workers": (
        "`max_workers: {total_min}` or lower the min_workers"),
    "Ray refuses max_workers under the min_workers, on premise with no min_workers": (
        "on premise, min_workers defaults to the number of worker_ips ({ips}): set "
        "`min_workers: {low}` as well, or `max_workers: {ips}`"),
    "Ray refuses max_workers under the min_workers": (
        "raise max_workers to at least the sum of the node types' min_workers"),
    "no PPO actor fits on a node type": "give it at least 1 CPU, or drop the node type",
    "a key is not in Ray's schema but close to one that is": "did you mean `{near}`?",
    "a key is not in Ray's schema": "delete it: Ray's schema has no such key here",
    "a legacy section is empty": "delete the `{key}:` line",
    "the file has legacy (Ray 1.x) sections": "write it the Ray 2.x way:\n{replacement}",
    "a second legacy section is there": "replace it together with `{first}` (see the finding there)",
    "Ray's validator rejects a value": "fix the value Ray names; `ray up --no-config-cache` re-checks it",
    "a key is written twice in one mapping": "keep one of them",
    "a `ray start` option does not exist but is close to one that does": "did you mean `{near}`?",
    "a `ray start` option is a Redis one (gone in Ray 2.x)": (
        "drop it: Ray 2.x has no Redis of its own; the head's GCS port is `{dashes}port` "
        "(default 6379)"),
    "a `ray start` option does not exist": "drop it: `ray start --help` lists the options",
    "a whole-number `ray start` option is given another value": "`{flag}={value}`",
    "a whole-number rayStartParam is given another value": "{key}: \"{value}\"",
    "a `ray start` option is given a value it does not take": "a value `{flag}` takes",
    "a KubeRay field is of the wrong kind": "write {name} as {kind} (see KubeRay's RayCluster reference)",
    "Ray cannot derive the autoscaling config from a KubeRay manifest": (
        "fix the cluster spec so the autoscaler sidecar can start"),
    "rayStartParams ask for GPUs the Ray container does not request": (
        "add `nvidia.com/gpu: {count}` to the container's limits, or drop {param}"),
    "rayStartParams ask for more than the Ray container's limit": (
        "make them agree: {param}: \"{limit}\" (or drop {param}: KubeRay then takes the "
        "container's limit)"),
    "the KubeRay head offers CPUs to trainings": (
        "rayStartParams: {{num-cpus: \"0\"}} on the head group, and worker groups for the "
        "training"),
    "the KubeRay autoscaler has no idle timeout": (
        "autoscalerOptions: {{idleTimeoutSeconds: 600}} (longer than the training's longest "
        "pause)"),
}
