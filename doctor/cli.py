"""The `rldoctor` command line: the options of each command and its error handling; what a
command does is in rldoctor.commands (check, collect, lint, smoke_train, watch, list, explain).

Kept light: `--help`, `list`, `explain` and `check --from` never import ray or
torch. Every error a user can cause is one line on stderr and an exit code
(see docs/architecture.md, "Contracts"): 0 clean, 1 findings at or above --fail-on or a check errored,
2 usage error, 3 nothing could be diagnosed.
"""

from __future__ import annotations

import math
import os
import sys
from contextlib import contextmanager

import click

from rldoctor import __version__
from rldoctor.errors import Interrupted, RldoctorError
from rldoctor.words import ZONE_LABEL
from rldoctor.redact import redact
from rldoctor.report.render import FORMATS, LINT_FORMATS
from rldoctor.engine.runner import DEFAULT_CHECK_TIMEOUT_S



def _fail(exc: RldoctorError) -> None:
    click.echo(f"rldoctor: {redact(str(exc))}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exc.exit_code)  # never hang in Ray's exit handlers after a failed join


@contextmanager
def one_line(interrupted: str | None = None):
    """The one error wrapper of every command: an error a user can cause (RldoctorError) is one
    redacted line on stderr and its exit code, never a traceback; Ctrl-C is `rldoctor:
    <interrupted>`, exit 130, when the command says what was cleaned up (else Python's own)."""
    try:
        yield
    except RldoctorError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        if interrupted is None:
            raise
        _fail(Interrupted(interrupted))


class Finite(click.FloatRange):
    """A number in range that is a number: nan and inf are refused as usage errors (exit 2)
    before anything runs (a check's timeout of nan used to end in a traceback); at most a
    million (seconds: 11 days; MB) unless told otherwise."""

    def __init__(self, min=None, max=1e6, **kwargs):  # noqa: A002 (click's names)
        super().__init__(min=min, max=max, **kwargs)

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


IGNORE_OPTION = click.option(
    "--ignore", "ignores", multiple=True, metavar="CODE[/RULE][@SUBJECT]",
    help="Mute a finding you accepted: CODE (or name) alone mutes it on every subject; "
    "CODE/RULE one row of a check with rules (RLD801/key-num_workers; `rldoctor list --rules`); "
    "@SUBJECT only where the finding's subject equals SUBJECT or starts with it (a prefix: "
    "node:8d80a6e0 is that node by its short id). Repeatable. Muted findings stay in the "
    "report, marked, and do not count toward --fail-on or the status.")
CONFIG_OPTION = click.option(
    "--config", type=click.Path(dir_okay=False), metavar="FILE",
    help="Ignore file to read [default: rldoctor.toml, else .rldoctor.toml, in the current "
    "directory]: [[ignore]] entries with code, subject, reason and expires (see docs/commands.md).")


def _print_version(ctx, _param, value) -> None:
    if not value or ctx.resilient_parsing:
        return
    from rldoctor.install import version_text

    click.echo(version_text(__version__))
    ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Print rldoctor's version, the Ray it has (none: the client only) and Python.")
def main() -> None:
    """rldoctor: the on-call doctor for Ray RLlib clusters.

    Run `rldoctor check --address HEAD:PORT` against a cluster to see what is wrong,
    where, and how to fix it. `rldoctor list` shows every check; `rldoctor explain
    CODE` prints one check's Symptom, Cause and Fix.
    """


@main.command()
@click.option("--address", help="GCS address HOST:PORT of the head, http(s)://HOST:PORT of its "
              "dashboard (what `ray job submit` takes, e.g. a KubeRay port-forward), or 'auto' for "
              "the cluster on this machine. Default: $RAY_ADDRESS, then auto.")
@click.option("--from", "from_file", type=click.Path(allow_dash=True), metavar="FILE|DIR|-",
              help="Diagnose a snapshot or bundle recorded by `rldoctor collect` instead of a "
              "live cluster; or the logs a cluster left: a Ray session directory (session_* "
              "or its logs/), a folder of several nodes' session directories or of `kubectl "
              "logs` outputs, a tarball of logs, one log file (`--from "
              "logs/worker-...-1234.err`), or `-` for lines pasted on standard input "
              "(`pbpaste | rldoctor check --from -`); or Tune's result.json. Read only, never "
              "written; the report says what the input let it judge.")
@click.option("--target", "targets", multiple=True, metavar="MODULE:ATTR",
              help="Check that an env class, env creator, callbacks class, AlgorithmConfig or "
              "registered env name (MODULE:ATTR or path/to/file.py:ATTR) can be shipped to the "
              "env runners (RLD501, RLD502). Repeatable. Without --address or --from no cluster "
              "is contacted.")
@click.option("--run", "runs", multiple=True, metavar="PATH",
              help="Also judge a training run's results: a Tune trial or experiment directory, "
              "or a result.json (RLD601 stall, RLD602 stale weights, RLD607 NaN, RLD608 "
              "throughput). Repeatable. Without --address or --from no cluster is contacted.")
@click.option("--only", multiple=True, metavar="CODES", help="Run only these checks (comma-separated codes or names).")
@click.option("--skip", multiple=True, metavar="CODES", help="Do not run these checks.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False), help="Write the report to FILE instead of stdout.")
@click.option("--fail-on", type=click.Choice(["info", "warn", "fail"]), default="fail",
              show_default=True, help="Exit 1 when a finding is at or above this severity.")
@click.option("--timeout", type=Finite(min=1), default=30.0, show_default=True,
              help="Upper bound in seconds on collecting from the cluster; joining it too, "
              "even while Ray holds the join (a fresh cluster whose workers hang at start): "
              "then one line naming the node, exit 3.")
@click.option("--check-timeout", type=Finite(min=0.1), default=DEFAULT_CHECK_TIMEOUT_S,
              show_default=True, help="A check still running after this many seconds is "
              "abandoned and reported as error.")
@click.option("--zone-label", default=None, metavar="KEY",
              help="Node label that names a node's availability zone "
              f"[default: {ZONE_LABEL}].")
@click.option("--set", "settings", multiple=True, metavar="CODE.PARAM=VALUE",
              help="Change a check's threshold, e.g. --set RLD201.warn_ms=10 "
              "(`rldoctor explain CODE` lists them).")
@click.option("--verbose", is_flag=True, help="Table and Markdown: list every check, not only "
              "those that are not OK.")
@click.option("--since", default=None, metavar="DURATION",
              help="How far back ended jobs and incident events count (RLD405, the timeline), "
              "e.g. 30m, 2h, 1d [default: 24h]. From logs (--from DIR) it counts back from "
              "the logs' last line.")
@IGNORE_OPTION
@CONFIG_OPTION
def check(address, from_file, only, skip, fmt, output, fail_on, timeout, check_timeout,
          zone_label, settings, verbose, since, targets, runs, ignores, config):
    """Diagnose a Ray cluster (or a recorded snapshot) and print findings with fixes.

    The report opens with the cluster: one row per node (state, CPUs, object store,
    spilled, memory, round trip, bandwidth; the worst rows of a large cluster). On a
    live cluster this includes the RLlib trainings running on it: their env runners
    and learners, the calls they are in and for how long, stacks of the stuck ones, lost
    runners and throughput (RLD605, RLD606, RLD608), and its security: token
    authentication off (RLD701) and Ray ports open on every interface or a public
    address (RLD702), read from each node's own /proc, never by scanning.

    After the fact, `--from DIR` reads the logs a cluster left (a copy of its session
    directories) and names the failed jobs, dead nodes, killed and crashed workers from
    them; checks that need a live cluster are skipped. Whatever logs you have do too:
    one file (`rldoctor check --from worker-5c1e...-01000000-4242.err`), or lines pasted
    on standard input (`rldoctor check --from - < pasted.txt`); the report's first lines
    say what that input let it judge.
    """
    with one_line(interrupted="interrupted: probes stopped and removed, no report written"):
        from rldoctor.commands._options import check_params, codes
        from rldoctor.commands.check import parse_duration, run

        code = run(address, from_file, codes(only), codes(skip), fmt, output, fail_on, timeout,
                   check_timeout, check_params(settings, zone_label), targets=targets, runs=runs,
                   ignores=ignores, config=config,
                   since_s=parse_duration(since, "--since") if since else None, verbose=verbose)
    _exit(code)


def _exit(code: int) -> None:
    """Leave at once once everything is written: Ray's exit handlers add ~0.2 s for nothing."""
    sys.stdout.flush()
    sys.stderr.flush()
    if "ray" in sys.modules:
        os._exit(code)
    sys.exit(code)


@main.command()
@click.option("--output", type=click.Path(dir_okay=False), help="Snapshot file to write.")
@click.option("--bundle", type=click.Path(), metavar="FILE.tar.gz",
              help="Write the incident bundle instead: snapshot, report, log tails, host facts "
              "and stacks of every node in one redacted tar.gz to attach to a ticket (through "
              "a dashboard address, gathered by the collectors' job inside the cluster).")
@click.option("--address", help="GCS address HOST:PORT, http(s)://HOST:PORT of the dashboard, "
              "or 'auto'. Default: $RAY_ADDRESS, then auto.")
@click.option("--timeout", type=Finite(min=1), default=30.0, show_default=True,
              help="Upper bound in seconds on taking the snapshot, joining the cluster "
              "included (the bundle's items have their own deadlines).")
@click.option("--from", "from_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Read the logs a cluster left instead of a live cluster: a Ray session "
              "directory (session_* or its logs/) or a folder of several nodes' session "
              "directories (read only, never written).")
@click.option("--force", is_flag=True, help="Replace an existing --output or --bundle file "
              "(without it an existing file is refused, before anything is collected).")
@click.option("--max-size", type=Finite(min=0.1), default=50.0, show_default=True,
              metavar="MB", help="--bundle: size cap; the largest logs are cut from the front to fit.")
@click.option("--obfuscate", is_flag=True, help="--bundle: also replace IP addresses and host "
              "names (the nodes', this machine's, any a URL names), consistently; the map goes "
              "to FILE.tar.gz.obfuscation-map.json (mode 0600), never into the bundle.")
@IGNORE_OPTION
@CONFIG_OPTION
def collect(output, bundle, address, from_dir, timeout, force, max_size, obfuscate, ignores, config):
    """Record a snapshot (--output) or an incident bundle (--bundle) of the cluster.

    With --from DIR both are made from the logs a cluster left (its session directories).
    `rldoctor check --from FILE` diagnoses either one offline. The bundle never holds the
    auth token, runtime_env env_vars values, secret-looking values or URL credentials:
    everything is redacted before it is written. The bundle's report.json and report.md are
    what `check --from` the bundle prints: the team's rldoctor.toml (or --config) and
    --ignore mute the same findings.
    """
    with one_line(interrupted="interrupted: probes stopped and removed, no "
                  + ("bundle" if bundle else "snapshot") + " written"):
        from rldoctor.commands.collect import (check_choice, collect_bundle_file,
                                               collect_snapshot_file)

        check_choice(output, bundle, force)
        if from_dir and address:
            from rldoctor.errors import UsageError

            raise UsageError("collect: --address and --from are exclusive: a live cluster or "
                             "the logs one left")
        if from_dir:
            from rldoctor.commands.collect import collect_from_logs

            line = collect_from_logs(from_dir, output, bundle, force, max_size, obfuscate,
                                     ignores, config)
        elif bundle:
            line = collect_bundle_file(bundle, address, timeout, force, max_size, obfuscate,
                                       ignores, config)
        else:
            line = collect_snapshot_file(output, address, timeout)
    click.echo(line)
    _exit(0)


@main.command("smoke-train")
@click.option("--address", help="GCS address HOST:PORT of the head, or 'auto'. Default: "
              "$RAY_ADDRESS, then the cluster `ray start` last started here; when none runs, "
              "a local Ray instance is started (and said so).")
@click.option("--env-runners", type=click.IntRange(min=1), default=None,
              help="Env runners to spread over the nodes. Default: one per alive node.")
@click.option("--target-return", type=float, default=195.0, show_default=True,
              help="Stop when the smoothed episode return reaches this (195: CartPole's classic "
              "'solved' bar).")
@click.option("--time-budget", type=Finite(min=1), default=180.0, show_default=True,
              help="Stop after this many seconds (Ray start included) if the target is not reached.")
@click.option("--scaling", metavar="COUNTS", help="Also run a short sweep over these env-runner "
              "counts, e.g. 1,2,4: iteration time, env steps/s, speedup, efficiency.")
@click.option("--plot", type=click.Path(dir_okay=False), metavar="FILE.png",
              help="Write the learning curve (return and env steps/s against time) to FILE.png.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False), help="Write the report to FILE instead of stdout.")
@click.option("--record", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the run as a snapshot; `rldoctor check --from FILE` re-diagnoses it.")
@click.option("--lr", type=Finite(min=0), default=None, help="Advanced: learning rate "
              "instead of the smoke default (1e-3); --lr 0 shows what a run that cannot learn reports.")
@click.option("--seed", type=int, default=None, help="Advanced: random seed of the run.")
def smoke_train(address, env_runners, target_return, time_budget, scaling, plot, fmt, output,
                record, lr, seed):
    """Prove the cluster trains: PPO on CartPole-v1 over its nodes, measured (RLD601-RLD604).

    Live progress goes to stderr (stdout for the table format); the verdict comes with
    figures: startup time, iteration time, env steps/s, steps and seconds to the
    target, RLlib's learner and weight-sync timers, where each env runner ran, and a
    checkpoint round trip (save, restore, act). Exit 0 when the run passed, 1 when it
    failed, 3 when the cluster cannot be reached.
    """
    # on Ctrl-C the trainer actor, its placement group and a local Ray are gone
    with one_line(interrupted="interrupted: smoke run stopped and removed, no report written"):
        from rldoctor.commands.smoke_train import smoke_train as run

        code = run(address, env_runners, target_return, time_budget, scaling, plot, fmt, output,
                   record, lr, seed)
    _exit(code)  # never hang in Ray's exit handlers


@main.command()
@click.option("--address", help="GCS address HOST:PORT of the head, http(s)://HOST:PORT of its "
              "dashboard (one short Ray job per round, stopped and deleted on exit), or 'auto' "
              "for the cluster on this machine. Default: $RAY_ADDRESS, then auto.")
@click.option("--interval", type=Finite(min=1), default=60.0, show_default=True,
              metavar="SECONDS", help="Seconds from the start of one round to the next.")
@click.option("--metrics-port", type=click.IntRange(min=0, max=65535), required=True,
              metavar="PORT", help="Serve Prometheus metrics on http://HOST:PORT/metrics.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True, metavar="HOST",
              help="Interface to serve the metrics on; 0.0.0.0 for a Prometheus on another "
              "machine.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Append the transitions (a finding opened or resolved, a round that failed) "
              "as JSON lines to FILE instead of stdout.")
@click.option("--only", multiple=True, metavar="CODES", help="Run only these checks (comma-separated codes or names).")
@click.option("--skip", multiple=True, metavar="CODES", help="Do not run these checks.")
@click.option("--timeout", type=Finite(min=1), default=30.0, show_default=True,
              help="Upper bound in seconds on collecting from the cluster, per round; on "
              "joining it too, even while Ray holds the join: the round then fails with one "
              "line naming the node, and the next round tries again.")
@click.option("--check-timeout", type=Finite(min=0.1), default=DEFAULT_CHECK_TIMEOUT_S,
              show_default=True, help="A check still running after this many seconds is "
              "abandoned and reported as error.")
@click.option("--set", "settings", multiple=True, metavar="CODE.PARAM=VALUE",
              help="Change a check's threshold, as for `check`.")
@IGNORE_OPTION
@CONFIG_OPTION
def watch(address, interval, metrics_port, metrics_host, log_path, only, skip, timeout,
          check_timeout, settings, ignores, config):
    """Run the checks every interval and serve the findings as Prometheus metrics.

    The same checks as `check`, against a live cluster, every --interval seconds;
    /metrics serves rldoctor_finding{code,name,severity,subject} = 1 for each finding
    of the latest round (gone when the finding is), rldoctor_check_status, rldoctor_up,
    rldoctor_last_run_timestamp_seconds, rldoctor_run_duration_seconds and per-training
    figures. Each finding that opens or resolves is one JSON line on stdout (or --log).
    The connection and one probe per node are kept between rounds; SIGTERM or Ctrl-C
    remove the probes and end the watch. Through a dashboard address each round is one
    short Ray job, and SIGTERM or Ctrl-C stop and delete the round's job. Alert rules:
    alerts/rldoctor.rules.yml.
    """
    with one_line():
        from rldoctor.commands._options import codes
        from rldoctor.commands.watch import watch as run

        code = run(address, interval, metrics_port, metrics_host, log_path, codes(only),
                   codes(skip), settings, timeout, check_timeout, ignores, config)
    _exit(code)


@main.command()
@click.argument("target", metavar="TARGET")
@click.option("--address", help="GCS address HOST:PORT of the head, http(s)://HOST:PORT of its "
              "dashboard (the probes then run inside one short Ray job), or 'auto'. Default: "
              "$RAY_ADDRESS, then auto.")
@click.option("--runtime-env", "runtime_env", metavar="JSON|FILE",
              help="The runtime_env the job will be submitted with (JSON text or a JSON file), "
              "e.g. '{\"working_dir\": \".\"}': the probes run in it on every node.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False), help="Write the report to FILE instead of stdout.")
@click.option("--fail-on", type=click.Choice(["info", "warn", "fail"]), default="fail",
              show_default=True, help="Exit 1 when a finding is at or above this severity.")
@click.option("--timeout", type=Finite(min=1), default=60.0, show_default=True,
              help="Upper bound in seconds on joining the cluster and collecting from it.")
@click.option("--verbose", is_flag=True, help="Table and Markdown: list every check.")
@IGNORE_OPTION
@CONFIG_OPTION
def preflight(target, address, runtime_env, fmt, output, fail_on, timeout, verbose, ignores,
              config):
    """Before you submit: will this training run on this cluster? (RLD901-RLD907)

    TARGET is the training as you have it: MODULE:ATTR (or file.py:ATTR) of an
    AlgorithmConfig, a script that builds one (train.py: run with its training entry
    points replaced, so it stops where it would build or fit, and nothing trains), or a
    checkpoint directory (its saved config). Against the live cluster it reports: env
    runners, learners and Tune trials that can never be placed or only after scale-up;
    the env's code that does not import or build on a node where runners land (in the
    job's runtime_env, or --runtime-env); numpy, gymnasium, torch, the env's package or
    Python differing between nodes; a storage_path that is not one shared directory;
    the env's contract (reset, a few hundred steps on one node: spaces, step API, finite
    rewards, episode ends) and its speed against rollout_fragment_length and
    sample_timeout_s; GPUs Ray counts that a worker cannot use. Every probe is a
    zero-CPU task, bounded, and removed after.
    """
    with one_line(interrupted="interrupted: probes stopped and removed, no report written"):
        from rldoctor.commands.preflight import run

        code = run(target, address, runtime_env, fmt, output, fail_on, timeout,
                   ignores=ignores, config=config, verbose=verbose)
    _exit(code)


@main.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--format", "fmt", type=click.Choice(LINT_FORMATS), default="text",
              show_default=True, help="text: one `path:line:col: CODE [severity] message "
              "(replacement)` a line; json: report v1 with each finding's location.")
@click.option("--fail-on", type=click.Choice(["info", "warn", "fail"]), default="fail",
              show_default=True, help="Exit 1 when a finding is at or above this severity.")
@click.option("--diff", is_flag=True, help="Print the mechanical fixes (renames that keep "
              "their meaning) as a unified diff; change nothing.")
@click.option("--fix", is_flag=True, help="Apply the mechanical fixes in place, then report "
              "what is left (it needs judgement).")
@click.option("--only", multiple=True, metavar="CODES", help="Report only these codes or rules "
              "(comma-separated: RLD801, RLD801/key-num_workers; `rldoctor list --rules`).")
@IGNORE_OPTION
@CONFIG_OPTION
def lint(paths, fmt, fail_on, diff, fix, only, ignores, config):
    """Lint training scripts, notebooks and cluster YAML for what this Ray rejects or ignores.

    PATH is a .py, .ipynb, .yaml or .yml file, or a directory to search. Nothing is
    imported or run (RLD801-RLD803). Exit 0 clean, 1 findings at or above
    --fail-on, 2 usage error, 3 an input could not be linted.
    """
    with one_line():
        from rldoctor.commands._options import codes
        from rldoctor.commands.lint import run_lint

        code = run_lint(list(paths), fmt, fail_on, diff, fix, ignores, config, codes(only))
    _exit(code)


@main.command("list")
@click.option("--rules", "rules_of", is_flag=False, flag_value="*", default=None, metavar="[CODE]",
              help="List the rules of the checks that have them (RLD801: one per table row), "
              "each with the CODE/RULE that --only, --ignore, rldoctor.toml and explain take.")
def list_checks(rules_of):
    """List every check with its code, area and where it came from (--rules: their rules)."""
    with one_line():
        from rldoctor.commands.list import list_checks as run, list_rules

        table, notes = run() if rules_of is None else list_rules(None if rules_of == "*" else rules_of)
    click.echo(table)
    for note in notes:
        click.echo(note, err=True)


@main.command()
@click.argument("code")
def explain(code):
    """Print a check's Symptom, Cause and Fix (CODE/RULE: one rule of it, e.g. RLD801/key-num_workers)."""
    with one_line():
        from rldoctor.commands.explain import explain as run

        text = run(code)
    click.echo(text)
