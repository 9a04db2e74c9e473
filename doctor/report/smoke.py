"""The smoke run's figures, a part of the report: what the JSON report's `figures` holds
(`figures`, built by the pipeline for `rldoctor smoke-train`), and for people a text block
(the table renderer draws it above the checks), a markdown section (after them) and a PNG
learning curve (`--plot`)."""

from __future__ import annotations

from tabulate import tabulate

from rldoctor.metric_numbers import finite


def figures(doc: dict) -> dict:
    """What goes into the JSON report's `figures`: the smoke figures, the curve, the sweep."""
    smoke = doc.get("smoke") or {}
    figures = dict(smoke.get("figures") or {})
    figures["curve"] = smoke.get("curve") or []
    if doc.get("scaling"):
        figures["scaling"] = doc["scaling"]
    return figures


def _f(value, fmt: str = "{:.1f}", none: str = "-") -> str:
    return none if value is None else fmt.format(value)


def headline(fig: dict) -> str:
    outcome = (fig.get("outcome") or "?").upper()
    target = fig.get("target_return")
    if fig.get("reached_target"):
        return (f"smoke training REACHED the target return {target:g} in "
                f"{_f(fig.get('seconds_to_target'))} s, {int(fig.get('steps_to_target') or 0):,} "
                f"env steps (wall time including Ray start)")
    return (f"smoke training {outcome}: target return {target:g} not reached "
            f"(best {_f(fig.get('best_return'))} after {fig.get('iterations')} iterations)")


def _placement(fig: dict) -> str:
    runners = fig.get("env_runners") or []
    where = ", ".join(f"#{r.get('index')}@{r.get('node_ip') or (r.get('node_id') or '?')[:8]}"
                      for r in runners)
    return (f"{len(runners)} on {fig.get('env_runner_nodes')} of {fig.get('alive_nodes')} "
            f"node(s): {where}" if runners else "-")


def _checkpoint(fig: dict) -> str:
    ck = fig.get("checkpoint") or {}
    if ck.get("status") == "ok":
        return (f"ok: restored policy's mean return {_f(ck.get('mean_return'))} over "
                f"{len(ck.get('returns') or [])} episodes (save {_f(ck.get('save_s'), '{:.2f}')} s, "
                f"restore {_f(ck.get('restore_s'))} s)")
    if ck.get("status") == "failed":
        return f"FAILED: {ck.get('error')}"
    return ck.get("status") or "skipped"


def figure_rows(fig: dict) -> list[tuple[str, str]]:
    startup = f"{_f(fig.get('startup_s'))} s until the first iteration (Ray " + (
        "started locally" if fig.get("started_local_ray") else "joined") + \
        f" in {_f(fig.get('connect_s'))} s)"
    return [
        ("startup", startup),
        ("iteration time", f"mean {_f(fig.get('iteration_s_mean'), '{:.2f}')} s, p95 "
                           f"{_f(fig.get('iteration_s_p95'), '{:.2f}')} s over {fig.get('iterations')} iterations"),
        ("env steps/s", f"{_f(fig.get('env_steps_per_s'), '{:,.0f}')} sampled "
                        f"({int(fig.get('env_steps_sampled') or 0):,} steps)"),
        ("to target", f"{_f(fig.get('steps_to_target'), '{:,.0f}')} env steps, "
                      f"{_f(fig.get('seconds_to_target'))} s wall, "
                      f"{_f(fig.get('training_seconds_to_target'))} s of training"),
        ("best return", f"{_f(fig.get('best_return'))} (mean of the last "
                        f"{fig.get('smoothing_episodes')} episodes)"),
        ("learner update", f"{_f(fig.get('learner_update_s_mean'), '{:.3f}')} s per iteration; "
                           f"weight sync {_f(fig.get('weight_sync_s_mean'), '{:.4f}')} s (RLlib timers)"),
        ("env runners", _placement(fig)),
        ("checkpoint", _checkpoint(fig)),
    ]


def scaling_rows(scaling: dict) -> list[list]:
    rows = []
    for r in scaling.get("runs") or []:
        if r.get("status") != "ok":
            rows.append([r.get("env_runners"), "-", "-", "-", "-", "-", "-",
                         f"failed: {(r.get('error') or '')[:60]}"])
            continue
        rows.append([r["env_runners"], r.get("nodes_used"), f"{r['mean_iter_s']:.2f}",
                     f"{r['env_steps_per_s']:,.0f}", f"{r.get('speedup', 0):.2f}x",
                     f"{100 * r.get('efficiency', 0):.0f}%", f"{r.get('env_steps_per_s_per_cpu', 0):,.0f}",
                     "recommended" if r["env_runners"] == scaling.get("recommended") else ""])
    return rows


SCALING_HEADERS = ["env runners", "nodes", "iteration s", "env steps/s", "speedup",
                   "efficiency", "steps/s per CPU", ""]


def render_text(fig: dict) -> str:
    out = [headline(fig)]
    width = max(len(k) for k, _ in figure_rows(fig))
    out += [f"  {k:<{width}}  {v}" for k, v in figure_rows(fig)]
    if fig.get("scaling"):
        out += ["", "scaling sweep (the same short run with each env-runner count):",
                tabulate(scaling_rows(fig["scaling"]), headers=SCALING_HEADERS, tablefmt="simple")]
    return "\n".join(out) + "\n\n"


def render_markdown(fig: dict) -> str:
    out = ["", "### Smoke training", "", headline(fig), "", "| figure | value |", "|---|---|"]
    out += [f"| {k} | {v.replace('|', '/')} |" for k, v in figure_rows(fig)]
    if fig.get("scaling"):
        out += ["", "#### Scaling sweep", "", "| " + " | ".join(SCALING_HEADERS[:-1]) + " | |",
                "|" + "---|" * len(SCALING_HEADERS)]
        out += ["| " + " | ".join(str(c) for c in row) + " |" for row in scaling_rows(fig["scaling"])]
    return "\n".join(out) + "\n"


def plot(fig: dict, path: str) -> None:
    """Learning curve: smoothed return and env steps/s against wall time (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = fig.get("curve") or []
    t = [p.get("elapsed_s") for p in curve]
    ret = [finite(p.get("return_mean")) for p in curve]  # a NaN (kept as text) is a gap
    sps = [p.get("steps_per_s") for p in curve]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                         gridspec_kw={"height_ratios": [2, 1]})
    top.plot(t, ret, marker="o", markersize=3, color="tab:blue",
             label=f"episode return (mean of last {fig.get('smoothing_episodes')} episodes)")
    if fig.get("target_return") is not None:
        top.axhline(fig["target_return"], color="tab:green", linestyle="--",
                    label=f"target {fig['target_return']:g}")
    if fig.get("startup_s") is not None:
        for ax in (top, bottom):
            ax.axvspan(0, fig["startup_s"], color="grey", alpha=0.12, linewidth=0)
        top.annotate("startup: Ray, placement, build", (0, 0.02), xycoords=("data", "axes fraction"),
                     xytext=(4, 4), textcoords="offset points", fontsize=8, color="dimgrey")
    hit = next((p for p in curve if fig.get("seconds_to_target") is not None
                and p.get("elapsed_s") == fig["seconds_to_target"]), None)
    if hit is not None:
        top.plot([hit["elapsed_s"]], [hit["return_mean"]], marker="*", markersize=14,
                 color="tab:green", linestyle="none", label="target reached")
    top.set_ylabel("episode return")
    top.legend(loc="upper left", fontsize=8)
    top.grid(alpha=0.3)
    top.set_title(headline(fig), fontsize=9)
    bottom.plot(t, sps, marker="o", markersize=3, color="tab:orange")
    bottom.set_ylabel("env steps / s")
    bottom.set_xlabel("wall time since rldoctor started (s)")
    bottom.grid(alpha=0.3)
    bottom.set_ylim(bottom=0)
    bottom.set_xlim(left=0)
    figure.tight_layout()
    import io
    import os

    from rldoctor.safe_write import PRIVATE, write_file

    image = io.BytesIO()  # the format from the name's suffix, as savefig(path) chose it
    figure.savefig(image, dpi=110, format=os.path.splitext(path)[1][1:].lower() or None)
    plt.close(figure)
    write_file(path, image.getvalue(), what="--plot", mode=PRIVATE)
