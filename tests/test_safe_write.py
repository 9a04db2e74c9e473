"""Every file rldoctor writes goes through rldoctor.safe_write: a temp file beside it and one
rename, never through a symbolic link at the destination (refused in one line), 0600 for
anything that may hold cluster data; `lint --fix` refuses links and read-only files, one line
each, and keeps the mode of what it rewrites.

Each test puts a link (or a read-only file) where rldoctor writes and checks what the link
points to is untouched: its bytes and its mode.
"""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from conftest import FIXTURES, run_rldoctor
from rldoctor.errors import Undiagnosable, UsageError
from rldoctor.safe_write import PRIVATE, Pending, write_file

SNAPSHOT = FIXTURES / "healthy-3node.json"
SESSION = FIXTURES / "sessions" / "node-killed"
RULES = FIXTURES / "lint" / "rules"


def _victim(tmp_path, name="victim.txt"):
    """A file someone else owns the content of, 0644, and what it holds."""
    victim = tmp_path / name
    victim.write_text("precious\n")
    victim.chmod(0o644)
    return victim


def _untouched(victim) -> bool:
    return victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# -- the helper ----------------------------------------------------------------------------------

def test_write_file_replaces_by_rename_with_the_mode_asked(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    target.chmod(0o644)
    inode = target.stat().st_ino
    write_file(str(target), "new")
    assert target.read_text() == "new" and _mode(target) == PRIVATE
    assert target.stat().st_ino != inode  # a new file renamed in, not the old one rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temp file left


def test_write_file_refuses_a_link_a_folder_and_a_missing_folder(tmp_path):
    victim = _victim(tmp_path)
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    with pytest.raises(UsageError, match=r"^--output .*link.json: is a symbolic link; rldoctor "
                                         r"does not write through links"):
        write_file(str(link), "evil")
    assert _untouched(victim) and link.is_symlink()
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="symbolic link"):
        write_file(str(dangling), "evil")
    assert not (tmp_path / "nowhere").exists()
    with pytest.raises(UsageError, match="is a directory"):
        write_file(str(tmp_path), "x")
    with pytest.raises(UsageError, match="no such folder"):
        write_file(str(tmp_path / "no" / "x.json"), "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.json", "link.json", "victim.txt"]


def test_a_link_placed_after_the_check_is_replaced_never_followed(tmp_path):
    victim = _victim(tmp_path)
    target = tmp_path / "out.json"
    pending = Pending(str(target))
    with open(pending.temp, "w") as out:
        out.write("report")
    target.symlink_to(victim)  # the race: a link appears between the check and the rename
    with pytest.raises(UsageError, match="became a symbolic link"):
        pending.commit()
    assert _untouched(victim) and not os.path.exists(pending.temp)


def test_a_device_and_this_process_stream_are_written_in_place(tmp_path, capfd):
    write_file("/dev/null", "nothing")
    write_file("/dev/stdout", "to the terminal\n")
    assert capfd.readouterr().out == "to the terminal\n"


# -- the commands --------------------------------------------------------------------------------

def test_check_output_through_a_link_is_refused_and_a_report_file_is_private(tmp_path):
    victim = _victim(tmp_path)
    link = tmp_path / "report.md"
    link.symlink_to(victim)
    ran = run_rldoctor("check", "--from", str(SNAPSHOT), "--format", "markdown", "--output", str(link))
    assert ran.code == 2, ran
    assert ran.stderr.strip().count("\n") == 0 and "symbolic link" in ran.stderr, ran
    assert _untouched(victim) and link.is_symlink()
    out = tmp_path / "real.md"
    assert run_rldoctor("check", "--from", str(SNAPSHOT), "--format", "markdown",
                        "--output", str(out)).code in (0, 1)
    assert _mode(out) == 0o600  # a report holds the cluster's names and addresses


def test_snapshot_and_bundle_are_both_private(tmp_path):
    snap, bundle = tmp_path / "s.json", tmp_path / "b.tar.gz"
    assert run_rldoctor("collect", "--output", str(snap), "--from", str(SESSION)).code == 0
    assert run_rldoctor("collect", "--bundle", str(bundle), "--from", str(SESSION)).code == 0
    assert _mode(snap) == _mode(bundle) == 0o600


@pytest.mark.parametrize("where", ["map", "bundle"])
def test_collect_bundle_force_never_writes_through_a_link(tmp_path, where):
    """The obfuscation map used to be opened with O_TRUNC at its path: a link there truncated
    its target and made it 0600."""
    victim = _victim(tmp_path)
    bundle = tmp_path / "b.tar.gz"
    link = tmp_path / "b.tar.gz.obfuscation-map.json" if where == "map" else bundle
    link.symlink_to(victim)
    ran = run_rldoctor("collect", "--bundle", str(bundle), "--from", str(SESSION),
                       "--obfuscate", "--force")
    assert ran.code == 3, ran
    assert len(ran.stderr.strip().splitlines()) == 1 and "symbolic link" in ran.stderr, ran
    assert _untouched(victim) and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["victim.txt", link.name])


def test_the_map_writer_itself_refuses_a_link(tmp_path):
    from rldoctor.bundle.obfuscate import Obfuscator

    victim = _victim(tmp_path)
    link = tmp_path / "map.json"
    link.symlink_to(victim)
    ob = Obfuscator({"gpu-7"})
    ob.text("10.0.0.1 gpu-7")
    with pytest.raises(Undiagnosable, match="symbolic link"):
        ob.write_map(str(link))
    assert _untouched(victim)


def test_watch_log_refuses_a_link(tmp_path):
    from rldoctor.watch.transitions import TransitionLog

    victim = _victim(tmp_path)
    link = tmp_path / "events.jsonl"
    link.symlink_to(victim)
    with pytest.raises(UsageError, match="symbolic link"):
        TransitionLog(str(link))
    assert _untouched(victim)
    real = TransitionLog(str(tmp_path / "new.jsonl"))
    real.write({"event": "x"})
    real.close()
    assert _mode(tmp_path / "new.jsonl") == 0o600


# -- lint --fix ----------------------------------------------------------------------------------

def _fixable(tmp_path, name):
    path = tmp_path / name
    shutil.copy(RULES / "rld801_silent.py", path)
    return path


def test_lint_fix_refuses_a_link_and_a_read_only_file_one_line_each(tmp_path, monkeypatch):
    monkeypatch.setenv("RLDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = _fixable(elsewhere, "real.py")
    real.chmod(0o644)
    before = real.read_text()
    work = tmp_path / "work"
    work.mkdir()
    (work / "linked.py").symlink_to(real)
    locked = _fixable(work, "locked.py")
    locked.chmod(0o444)
    plain = _fixable(work, "plain.py")
    plain.chmod(0o640)
    ran = run_rldoctor("lint", "--fix", str(work))
    said = [line for line in ran.stderr.splitlines() if "not rewritten" in line]
    assert len(said) == 2, ran
    assert any("linked.py: not rewritten: it is a symbolic link" in line for line in said), said
    assert any("locked.py: not rewritten: the file is read-only" in line for line in said), said
    assert (work / "linked.py").is_symlink() and real.read_text() == before
    assert _mode(real) == 0o644
    assert locked.read_text() == before and _mode(locked) == 0o444
    assert plain.read_text() != before and _mode(plain) == 0o640  # fixed, its mode kept
