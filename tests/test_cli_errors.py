"""The CLI's one error wrapper (rldoctor.cli.one_line): every command's errors a user can cause
are one redacted line on stderr and an exit code, through the same code.

`explain` and `list --rules` used to print their error unredacted (their own `sys.exit`): a
secret pasted as a code was echoed back. The scan below keeps every command on the wrapper.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import run_rldoctor

ROOT = Path(__file__).resolve().parent.parent
SECRET = "hf_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"


def test_explain_and_list_redact_what_they_echo():
    for args in (("explain", SECRET), ("list", "--rules", SECRET)):
        result = run_rldoctor(*args)
        assert result.code == 2, result.stderr
        assert SECRET not in result.stderr and "***redacted***" in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def outside_the_wrapper(source: str) -> list[str]:
    """The commands of a cli module that handle errors their own way: "name: why"."""
    tree = ast.parse(source)
    wrong = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        is_command = any("command" in ast.unparse(d) for d in node.decorator_list)
        if node.name in ("_fail", "one_line") or not is_command:
            continue
        wrapped = any(isinstance(n, ast.With) and any("one_line" in ast.unparse(i.context_expr)
                                                       for i in n.items) for n in ast.walk(node))
        handlers = [n for n in ast.walk(node) if isinstance(n, ast.ExceptHandler)]
        exits = [n for n in ast.walk(node) if isinstance(n, ast.Call)
                 and ast.unparse(n.func) in ("sys.exit", "os._exit", "_fail")]
        if not wrapped:
            wrong.append(f"{node.name}: not run inside one_line")
        if handlers or exits:
            wrong.append(f"{node.name}: handles its errors itself")
    return wrong


def test_every_command_goes_through_the_one_wrapper():
    assert outside_the_wrapper((ROOT / "doctor" / "cli.py").read_text()) == []


def test_the_scan_finds_a_command_with_its_own_wrapper():
    source = (
        "@main.command()\ndef good(x):\n    with one_line():\n        y = run(x)\n    _exit(y)\n\n"
        "@main.command()\ndef own(x):\n    try:\n        y = run(x)\n    except RldoctorError as exc:\n"
        "        click.echo(str(exc), err=True)\n        sys.exit(exc.exit_code)\n\n"
        "@main.command('bare')\ndef bare(x):\n    run(x)\n\n"
        "def helper():\n    sys.exit(1)\n")
    assert outside_the_wrapper(source) == [
        "own: not run inside one_line", "own: handles its errors itself", "bare: not run inside one_line"]
