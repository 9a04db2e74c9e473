"""rldoctor's shared vocabulary: one way to say each thing, for every side.

How a node is named in a message, a size, one line of an error, a percentile, a Ray version,
and the constants more than one part of rldoctor must agree on. Checks, reports, the bundle,
progress lines, smoke-train and the code that runs on the cluster's nodes all take them from
here, so one report never names one node three ways.

STANDARD LIBRARY ONLY: this module is shipped to clusters (the dashboard path's package) and
travels by value with the node-side functions (`register`), onto nodes that have nothing of
rldoctor installed. Nothing here imports ray or any other part of rldoctor at module level.
"""

from __future__ import annotations

import itertools
import math

# -- shared constants --------------------------------------------------------------------------
ZONE_LABEL = "ray.io/availability-zone"  # the node label that says a node's zone (RLD201/203, overview)
OLDEST_RAY = (2, 40)                     # the oldest Ray rldoctor supports
TOKEN_AUTH_FROM = (2, 52)                # Ray has token authentication from this release on
LONG_CALL_S = 10.0                       # a call to an RLlib actor this old is "long" (collector default;
                                         # readers take the value the snapshot records: `long_call_s`)
RECENT_DEATH_H = 24.0                    # a worker that died this recently (before the snapshot) is
RECENT_DEATH_S = RECENT_DEATH_H * 3600   # "recent": RLD402/RLD403 judge it, the bundle keeps its log
# The RLlib algorithms rldoctor knows by name (a class `PPO`, a config `PPOConfig`, a string "PPO").
ALGORITHMS = ("PPO", "APPO", "IMPALA", "Impala", "DQN", "SAC", "CQL", "BC", "MARWIL", "DreamerV3",
              "IQL", "TQC")

# -- RLlib result rows: the names both readers share ---------------------------------------------
# A result row of `Algorithm.train()` (smoke-train, on the cluster) and of Tune's result.json
# (`check --run`) is read into a point with these names; the figure's path in the row follows.
# A non-finite number is kept as its text ("NaN", see rldoctor.metric_numbers.json_number), so a
# check can see a NaN wherever the point came from.
RESULT_ROW = {
    "iteration": ("training_iteration",),
    "time_total_s": ("time_total_s",),
    "time_this_iter_s": ("time_this_iter_s",),
    "return_mean": ("env_runners", "episode_return_mean"),
    "episodes": ("env_runners", "num_episodes"),
    "env_steps": ("env_runners", "num_env_steps_sampled"),
    "env_steps_lifetime": ("env_runners", "num_env_steps_sampled_lifetime"),
    "runner_weights_seq_no": ("env_runners", "weights_seq_no"),
    "runners_healthy": ("fault_tolerance", "num_healthy_workers"),
    "runners_dropped": ("fault_tolerance", "num_env_runners_dropped_lifetime"),
    "runner_restarts": ("fault_tolerance", "num_remote_worker_restarts"),
    "sample_s": ("timers", "env_runner_sampling_timer"),
    "learner_update_s": ("timers", "learner_update_timer"),
    "sync_weights_s": ("timers", "synch_weights"),
}
# Per learner module (`learners.<module id>.<name>`): what a training check may judge on.
LEARNER_HEALTH = ("total_loss", "policy_loss", "vf_loss", "mean_kl_loss", "entropy",
                  "vf_loss_unclipped", "gradients_default_optimizer_global_norm",
                  "default_optimizer_learning_rate", "curr_kl_coeff")
NAN_AS_TEXT = True  # both readers keep NaN as text (never drop it): RLD602/RLD607 must see it


# -- a node in a message -------------------------------------------------------------------------
SHORT_ID = 12  # characters of a node id shown in a message (the overview's short_id too)


def short_id(node_id: str | None) -> str:
    return str(node_id or "?")[:SHORT_ID]


def node_label(node_id: str | None, ip: str | None = None, *more: str) -> str:
    """'node 1a2b3c4d5e6f (10.0.0.2)'; `more` joins inside the parentheses:
    node_label(id, ip, "head") -> 'node 1a2b3c4d5e6f (10.0.0.2, head)'."""
    inside = ", ".join([ip or "?", *(m for m in more if m)])
    return f"node {short_id(node_id)} ({inside})"


def node_of(node: dict | None, node_id: str | None = None, *more: str, head: bool = False) -> str:
    """node_label of one `nodes` entry of a snapshot; `head=True` adds 'head' on the head node."""
    node = node or {}
    extra = ("head",) if head and node.get("is_head") else ()
    return node_label(node_id or node.get("node_id"), node.get("ip"), *extra, *more)


# -- sizes -----------------------------------------------------------------------------------------
KiB, MiB, GiB = 2**10, 2**20, 2**30
_UNITS = {"KiB": KiB, "MiB": MiB, "GiB": GiB}


def size(value, unit: str | None = None, none: str = "-") -> str:
    """Bytes as '1.2 GiB', '300.0 MiB' or '12.0 KiB' (0 is '0.0 MiB'); `unit` fixes the unit;
    None (a figure not read) is `none`."""
    if value is None:
        return none
    if unit is None:
        unit = "GiB" if value >= GiB else "MiB" if value >= MiB or value == 0 else "KiB"
    return f"{value / _UNITS[unit]:.1f} {unit}"


# -- one line of an error ------------------------------------------------------------------------
def _message_lines(exc: BaseException) -> list[str]:
    return [line.strip() for line in str(exc).strip().splitlines() if line.strip()]


def first_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line of the message`: a local error, whose first line says what went wrong."""
    lines = _message_lines(exc)
    return f"{type(exc).__name__}: {lines[0][:limit]}" if lines else type(exc).__name__


def last_line(exc: BaseException, limit: int = 500) -> str:
    """`Type: last line of the message`: a remote error (RayTaskError, a traceback in its
    message), whose last line is the exception that was raised over there."""
    lines = _message_lines(exc)
    name = type(exc).__name__
    if not lines:
        return name
    line = lines[-1]
    return (line if line.startswith(name) else f"{name}: {line}")[:limit]


def first_text_line(text, limit: int = 300, empty: str = "") -> str:
    """The first non-blank line of `text`, cut at `limit`; `empty` when there is none."""
    for line in str(text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return empty


def shorten(text, limit: int = 300) -> str:
    """`text` on one line (whitespace folded), cut to at most `limit` characters with ' ...'."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[:max(0, limit - 4)] + " ..."


# -- percentiles -----------------------------------------------------------------------------------
def percentile(values, q: float) -> float | None:
    """The q-th percentile (q in 0..100), linearly interpolated between the closest ranks (so
    percentile(v, 50) is the median); values that are None or NaN are left out; None when
    nothing is left."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in 0..100, not {q}")
    ordered = sorted(v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v)))
    if not ordered:
        return None
    pos = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


# -- Ray versions ----------------------------------------------------------------------------------
def version_tuple(text: str | None, parts: int = 3) -> tuple[int, ...]:
    """'2.52.1' -> (2, 52, 1); '2.60.0rc1' -> (2, 60, 0); stops at the first piece with no digit."""
    found = []
    for piece in str(text or "").split(".")[:parts]:
        digits = "".join(itertools.takewhile(str.isdigit, piece.strip()))
        if not digits:
            break
        found.append(int(digits))
    return tuple(found)


def has_token_auth(version: str | None) -> bool | None:
    """Whether a Ray of this version has token authentication; None when the version is unknown."""
    major_minor = version_tuple(version, 2)
    return None if len(major_minor) < 2 else major_minor >= TOKEN_AUTH_FROM


def token_auth_since() -> str:
    return ".".join(map(str, TOKEN_AUTH_FROM))


def register() -> None:
    """Pickle this module's functions by value with the node-side code that calls them."""
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
