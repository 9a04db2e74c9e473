"""The plan of `rldoctor preflight TARGET`, read in a child process beside the join.

Reading a training imports RLlib and runs the user's code (seconds of CPU). In a process of its
own it runs on another core while the cluster is joined and its snapshot taken, instead of
taking the GIL from them; the user's code cannot print into the report, patch `ray.init` in the
process that joins, or hang it: past the deadline the child is killed and the reading is one
line. The child runs `rldoctor.inputs.training.plan_of` with the parent's `sys.path` and
answers one JSON object on its stdout; what the user's code prints goes to a temporary file,
of which only the last line is ever read (why the child died).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from rldoctor.errors import RldoctorError, UsageError, first_line

_TAIL_BYTES = 4096  # of the child's own output, for the line that says why it died


class PlanLoader:
    """Starts reading the plan of `target` at once; `get()` waits for it (until `timeout_s`
    after the start) and raises what the reading raised: a UsageError (one line, exit 2)
    for a TARGET that gives no config."""

    def __init__(self, target: str, runtime_env: dict | None = None, timeout_s: float = 60.0):
        from rldoctor.inputs.training import check_target

        check_target(target)  # what needs no import is said at once
        self.target = target
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self._plan: dict | None = None
        self._error: RldoctorError | None = None
        self._said = tempfile.TemporaryFile()
        request = json.dumps({"target": target, "runtime_env": runtime_env, "path": sys.path})
        self._child = subprocess.Popen(
            [sys.executable, "-c", "from rldoctor.inputs.plan_reader import main; main()", request],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._said, text=True)

    def get(self) -> dict:
        if self._plan is None and self._error is None:
            try:
                self._plan = self._read()
            except RldoctorError as exc:
                self._error = exc
        if self._error is not None:
            raise self._error
        return self._plan

    def _read(self) -> dict:
        try:
            answer, _ = self._child.communicate(timeout=max(0.1, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._child.kill()
            self._child.wait()
            raise UsageError(f"{self.target}: reading the training took over {self.timeout_s:g} s "
                             "(does it train or wait before it builds its config?)") from None
        finally:
            self._child.stdout.close()
        try:
            reply = json.loads(answer)
        except ValueError:
            raise RldoctorError(f"{self.target}: the process reading the training ended "
                                f"(exit {self._child.returncode}) without a plan: {self._tail()}") from None
        if "usage_error" in reply:
            raise UsageError(reply["usage_error"])
        if "error" in reply:
            raise RldoctorError(f"{self.target}: reading the training failed: {reply['error']}")
        return reply["plan"]

    def close(self) -> None:
        """The child killed if it still reads (the caller is leaving), its file closed."""
        if self._child.poll() is None:
            self._child.kill()
            self._child.wait()
        self._said.close()

    def _tail(self) -> str:
        self._said.seek(0, os.SEEK_END)
        self._said.seek(max(0, self._said.tell() - _TAIL_BYTES))
        lines = self._said.read().decode(errors="replace").strip().splitlines()
        return lines[-1][-300:] if lines else "it printed nothing"


def main() -> None:
    """The child: the request as its argument, the answer on the stdout it was given;
    everything the user's code prints goes to stderr (the parent's file)."""
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    request = json.loads(sys.argv[1])
    sys.path[:] = request["path"]
    try:
        from rldoctor.inputs.training import plan_of

        reply = {"plan": plan_of(request["target"], request["runtime_env"])}
    except UsageError as exc:
        reply = {"usage_error": str(exc)}
    except BaseException as exc:  # noqa: BLE001 (the parent says it in one line)
        reply = {"error": f"{type(exc).__name__}: {first_line(exc)}"}
    answer.write(json.dumps(reply))
    answer.flush()
    os._exit(0)  # the user's threads and atexit hooks are not waited for
