"""The shared vocabulary (rldoctor.words): one way to name a node, a size, an error line, a
percentile and a Ray version, used by the checks, the bundle, progress lines and smoke-train."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from rldoctor import words
from rldoctor.cluster import network as collect_network

ROOT = Path(__file__).resolve().parent.parent

WORDS = Path(words.__file__)


def test_words_imports_only_the_standard_library_at_module_level():
    """It travels to nodes that have nothing of rldoctor installed (pickled by value)."""
    tree = ast.parse(WORDS.read_text())
    imported = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            imported.append(node.module)
    assert imported and all(name.split(".")[0] in ("__future__", "itertools", "math") for name in imported), imported


@pytest.mark.parametrize("args, label", [
    (("8d80a6e00ce7ffff", "10.0.0.2"), "node 8d80a6e00ce7 (10.0.0.2)"),
    (("8d80a6e00ce7ffff", None), "node 8d80a6e00ce7 (?)"),
    (("8d80a6e00ce7ffff", "10.0.0.2", "head"), "node 8d80a6e00ce7 (10.0.0.2, head)"),
    (("8d80a6e00ce7ffff", "10.0.0.2", "", "zone a"), "node 8d80a6e00ce7 (10.0.0.2, zone a)"),
    ((None, "10.0.0.2"), "node ? (10.0.0.2)"),
])
def test_a_node_is_named_one_way(args, label):
    assert words.node_label(*args) == label


def test_node_of_reads_a_nodes_entry_and_says_head_only_when_asked():
    head = {"node_id": "a" * 56, "ip": "10.0.0.1", "is_head": True}
    assert words.node_of(head) == "node aaaaaaaaaaaa (10.0.0.1)"
    assert words.node_of(head, head=True) == "node aaaaaaaaaaaa (10.0.0.1, head)"
    assert words.node_of({"node_id": "b" * 56, "ip": "10.0.0.2"}, head=True) == "node bbbbbbbbbbbb (10.0.0.2)"
    assert words.node_of(None, "c" * 56) == "node cccccccccccc (?)"


@pytest.mark.parametrize("value, unit, text", [
    (None, None, "-"), (0, None, "0.0 MiB"), (512, None, "0.5 KiB"), (2**20 - 1, None, "1024.0 KiB"),
    (2**20, None, "1.0 MiB"), (2**30 - 1, None, "1024.0 MiB"), (2**30, None, "1.0 GiB"),
    (3 * 2**30, "MiB", "3072.0 MiB"), (64 * 2**20, "GiB", "0.1 GiB"),
])
def test_sizes_cut_over_at_one_mib_and_one_gib(value, unit, text):
    assert words.size(value, unit) == text


def test_one_line_of_an_error():
    assert words.first_line(ValueError("\n  bad thing  \nmore")) == "ValueError: bad thing"
    assert words.first_line(ValueError("")) == "ValueError"
    assert words.first_line(ValueError("x" * 50), 10) == "ValueError: " + "x" * 10
    assert words.last_line(RuntimeError("Traceback\n  File x\nKeyError: 'k'")) == "RuntimeError: KeyError: 'k'"
    assert words.last_line(ValueError("Traceback\nValueError: v")) == "ValueError: v"
    assert words.last_line(RuntimeError("boom")) == "RuntimeError: boom"
    assert words.first_text_line("\n\n  two words \nthree", 5) == "two w"
    assert words.first_text_line("  \n", empty="no detail") == "no detail"


def test_errors_reexports_the_one_implementation():
    from rldoctor import errors

    assert errors.first_line is words.first_line and errors.last_line is words.last_line


@pytest.mark.parametrize("text, limit, short", [
    ("a  b\n c", 10, "a b c"),
    ("x" * 10, 10, "x" * 10),            # exactly the limit: whole
    ("x" * 11, 10, "x" * 6 + " ..."),    # one over: cut, and never longer than the limit
    (None, 10, ""),
])
def test_shorten_folds_whitespace_and_keeps_within_the_limit(text, limit, short):
    assert words.shorten(text, limit) == short and len(words.shorten(text, limit)) <= limit


@pytest.mark.parametrize("values, q, expected", [
    ([1, 2, 3, 4, 5], 0, 1), ([1, 2, 3, 4, 5], 100, 5), ([1, 2, 3, 4, 5], 50, 3),
    ([1, 2, 3, 4], 50, 2.5),              # the median of an even count
    ([10], 95, 10), ([3, 1, 2], 25, 1.5),  # unsorted input
    (list(range(1, 101)), 95, 95.05), (list(range(1, 101)), 90, 90.1), (list(range(1, 101)), 10, 10.9),
    ([None, 4, float("nan"), 2], 50, 3),   # missing and NaN values are left out
    ([], 50, None), ([None], 95, None),
])
def test_percentile_on_one_scale_at_the_boundaries(values, q, expected):
    got = words.percentile(values, q)
    assert got == expected if expected is None else math.isclose(got, expected)


@pytest.mark.parametrize("q", [-0.1, 100.1])
def test_percentile_refuses_a_q_off_the_0_to_100_scale(q):
    with pytest.raises(ValueError):
        words.percentile([1, 2], q)


def test_the_collector_and_smoke_train_share_the_percentile():
    """The network collector's p95 and smoke-train's iteration p95 are one function."""
    assert not hasattr(collect_network, "_percentile")
    assert collect_network.percentile is words.percentile


@pytest.mark.parametrize("text, parts, expected", [
    ("2.52.1", 3, (2, 52, 1)), ("2.60.0rc1", 3, (2, 60, 0)), ("2.40", 3, (2, 40)),
    ("2.x", 3, (2,)), ("", 3, ()), (None, 3, ()), ("2.52.1", 2, (2, 52)),
])
def test_version_tuple(text, parts, expected):
    assert words.version_tuple(text, parts) == expected


@pytest.mark.parametrize("version, has", [
    ("2.51.9", False), ("2.52.0", True), ("2.52", True), ("2.60.0", True), ("3.0", True),
    ("2.40.0", False), ("2", None), ("", None), ("nightly", None),
])
def test_token_auth_since_2_52(version, has):
    assert words.TOKEN_AUTH_FROM == (2, 52) and words.token_auth_since() == "2.52"
    assert words.has_token_auth(version) is has


def test_token_auth_constant_is_the_dashboards_and_the_checks():
    from rldoctor.checks.security import exposure as security
    from rldoctor.dashboard import cluster_info

    assert cluster_info.TOKEN_AUTH_FROM is words.TOKEN_AUTH_FROM
    assert cluster_info.version_tuple is words.version_tuple
    assert security._old_ray({"ray_version": "2.51.0"}) == "2.51.0"
    assert security._old_ray({"ray_version": "2.52.0"}) is None
    assert security._old_ray({"ray_version": "weird"}) is None


def aliases(root: Path) -> list[str]:
    """Module-level names that are only a second name for another rldoctor module's value
    (`X = words.X`, `x = imported_x`, `X = frozenset(words.X)`): "path:line NAME = value"."""
    found = []
    for path in sorted((root / "doctor").rglob("*.py")) + sorted((root / "checks").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("rldoctor")):
                imported |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {(a.asname or a.name).split(".")[0] for a in node.names
                             if a.name.startswith("rldoctor")}
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)):
                continue
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and len(value.args) == 1 \
                    and value.func.id in ("frozenset", "tuple", "set", "list", "dict"):
                value = value.args[0]
            while isinstance(value, ast.Attribute):
                value = value.value
            if isinstance(value, ast.Name) and value.id in imported:
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno} "
                             f"{node.targets[0].id} = {ast.unparse(node.value)}")
    return found


def test_shared_constants_have_one_home_and_one_name():
    """A shared value is read under its own name (words.LONG_CALL_S), never re-exported under a
    second one: a grep finds every reader."""
    assert aliases(ROOT) == []
    # "A recent death": one window for RLD402/RLD403 and for the logs the bundle keeps.
    assert words.RECENT_DEATH_H * 3600 == words.RECENT_DEATH_S == 24 * 3600


def test_the_alias_scan_finds_a_second_name(tmp_path):
    (tmp_path / "doctor").mkdir()
    (tmp_path / "checks").mkdir()
    (tmp_path / "doctor" / "a.py").write_text(
        "import re\nfrom rldoctor import words\nfrom rldoctor.words import first_line, ZONE\n"
        "LONG = words.LONG_CALL_S\nerror_line = first_line\nALGOS = frozenset(words.ALGORITHMS)\n"
        "_X = re.compile('x')\n_I = re.IGNORECASE\nOWN = 3\nTWICE = OWN\n")
    (tmp_path / "checks" / "b.py").write_text("from rldoctor.words import ZONE\nDEFAULT = ZONE\n")
    assert aliases(tmp_path) == [
        "doctor/a.py:4 LONG = words.LONG_CALL_S", "doctor/a.py:5 error_line = first_line",
        "doctor/a.py:6 ALGOS = frozenset(words.ALGORITHMS)", "checks/b.py:2 DEFAULT = ZONE"]


def test_the_result_row_vocabulary_covers_what_both_readers_keep():
    """The names a result row's point has (the results-file reader's) and where each comes from."""
    from rldoctor.inputs import runs

    point = runs.point_of({"training_iteration": 3, "time_total_s": 9.0, "time_this_iter_s": 3.0,
                           "env_runners": {"episode_return_mean": float("nan"), "num_episodes": 4},
                           "fault_tolerance": {"num_healthy_workers": 2}})
    assert point["return_mean"] == "NaN"  # kept as text, never dropped (NAN_AS_TEXT)
    named = set(point) - {"learners", "env_steps_per_s"}
    assert named <= set(words.RESULT_ROW), named - set(words.RESULT_ROW)
    for name in named:
        path = words.RESULT_ROW[name]
        assert isinstance(path, tuple) and path and all(isinstance(p, str) for p in path)
