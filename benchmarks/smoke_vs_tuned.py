"""Time to a mean return of 195 on CartPole-v1: rldoctor's smoke run vs RLlib's tuned example.

    python benchmarks/smoke_vs_tuned.py [--seeds 1,2,3] [--target 195] [--budget 240]

In one run on this machine, alternating per seed:
  * rldoctor's default smoke settings (rldoctor.cluster.smoke.SmokeSettings)
  * RLlib's tuned CartPole PPO settings (tuned_examples/ppo/cartpole_ppo.py: lr 3e-4,
    num_epochs 6, vf_loss_coeff 0.01, one 32-unit linear layer shared with the value
    head, PPOConfig defaults otherwise: 4000-step batches, minibatches of 128, two env
    runners with one env each)
each in a fresh process with a fresh local Ray instance of its own (private RAY_TMPDIR),
through the same harness (rldoctor.cluster.smoke.run_smoke), to the same target on the same
metric (RLlib's episode_return_mean over the last 20 episodes). The time is the wall
time from the start of the run, Ray start included, to the end of the iteration
that reached the target; the process's own wall time is shown too. Then a bare
gymnasium loop (random actions, no Ray) gives the raw env steps per second.
Prints every sample, the medians, and whether rldoctor's median is no worse.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bare_env_steps_per_s(steps: int = 200_000) -> float:
    """A plain gymnasium CartPole-v1 loop with random actions: the env's own speed."""
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.action_space.seed(0)
    started = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - started)


def child(kind: str, seed: int, target: float, budget: float) -> None:
    """One run, in this process: print its figures as JSON on the last line."""
    from rldoctor.cluster import smoke

    if kind == "rldoctor":
        settings = smoke.SmokeSettings(seed=seed, eval_episodes=0)
        runners = None  # one per alive node: 1 here
    else:
        settings = smoke.rllib_tuned_settings(seed=seed, eval_episodes=0)
        runners = 2  # PPOConfig's default num_env_runners, as the tuned example runs
    opts = smoke.SmokeOptions(env_runners=runners, target_return=target, time_budget_s=budget,
                              settings=settings)
    doc = smoke.run_smoke(opts, lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps(doc["smoke"]["figures"]))


def one(kind: str, seed: int, target: float, budget: float) -> dict:
    ray_tmp = tempfile.mkdtemp(prefix="rlb-", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["RAY_TMPDIR"] = ray_tmp
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", kind, "--seed", str(seed),
                               "--target", str(target), "--budget", str(budget)],
                              capture_output=True, text=True, env=env, timeout=budget + 300)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} seed {seed} exited {proc.returncode}: {proc.stderr[-1500:]}")
    fig = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"kind": kind, "seed": seed, "reached": fig["reached_target"],
            "seconds_to_target": fig["seconds_to_target"], "steps_to_target": fig["steps_to_target"],
            "startup_s": fig["startup_s"], "connect_s": fig["connect_s"],
            "iterations": fig["iterations"], "env_steps_per_s": fig["env_steps_per_s"],
            "process_wall_s": round(wall, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--target", type=float, default=195.0)
    parser.add_argument("--budget", type=float, default=240.0)
    parser.add_argument("--child", choices=("rldoctor", "tuned"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write all samples to this file")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seed, args.target, args.budget)
        return 0

    seeds = [int(s) for s in args.seeds.split(",")]
    samples = []
    for seed in seeds:
        for kind in ("rldoctor", "tuned"):
            sample = one(kind, seed, args.target, args.budget)
            samples.append(sample)
            print(json.dumps(sample), flush=True)
    bare = bare_env_steps_per_s()
    print(f"\nbare gymnasium CartPole-v1 loop (random actions, no Ray): {bare:,.0f} env steps/s")

    summary = {"bare_env_steps_per_s": round(bare, 1), "target": args.target}
    for kind in ("rldoctor", "tuned"):
        mine = [s for s in samples if s["kind"] == kind]
        times = [s["seconds_to_target"] if s["reached"] else float("inf") for s in mine]
        summary[kind] = {
            "reached": sum(s["reached"] for s in mine), "runs": len(mine),
            "seconds_to_target": times, "median_seconds_to_target": statistics.median(times),
            "max_seconds_to_target": max(times),
            "median_steps_to_target": statistics.median(
                [s["steps_to_target"] or float("inf") for s in mine]),
            "median_env_steps_per_s": statistics.median(s["env_steps_per_s"] or 0 for s in mine),
            "median_startup_s": statistics.median(s["startup_s"] for s in mine),
        }
        print(f"{kind:>8}: reached {summary[kind]['reached']}/{len(mine)}; seconds to "
              f"{args.target:g} (Ray start included): "
              + ", ".join(f"{t:.1f}" for t in times)
              + f"; median {summary[kind]['median_seconds_to_target']:.1f}, steps "
              f"{summary[kind]['median_steps_to_target']:,.0f}, env steps/s "
              f"{summary[kind]['median_env_steps_per_s']:,.0f}, startup "
              f"{summary[kind]['median_startup_s']:.1f}s")
    ok = (summary["rldoctor"]["median_seconds_to_target"]
          <= summary["tuned"]["median_seconds_to_target"])
    under = summary["rldoctor"]["max_seconds_to_target"] < 60
    print(f"\nrldoctor no worse than the tuned example: {'yes' if ok else 'NO'}; "
          f"every rldoctor run under 60 s: {'yes' if under else 'NO'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": samples, "summary": summary}, indent=2))
    return 0 if ok and under else 1


if __name__ == "__main__":
    sys.exit(main())
