"""One forwarded port into a network namespace, as `kubectl port-forward` gives.

    with PortForward(["ip", "netns", "exec", ns], "127.0.0.1", 8265) as fwd:
        fwd.url   # http://127.0.0.1:<free port>, in the test's own namespace

The listening socket is made here, in the test's namespace; a child process that runs in
the cluster's namespace inherits it, accepts on it and connects each client to the target
there, copying bytes both ways. Only this one port crosses over.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading


class PortForward:
    def __init__(self, prefix: list[str], host: str, port: int):
        self.prefix = prefix
        self.target = (host, port)
        self.listener: socket.socket | None = None
        self.proc: subprocess.Popen | None = None

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "PortForward":
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        fd = self.listener.fileno()
        self.proc = subprocess.Popen(
            [*self.prefix, sys.executable, __file__, str(fd), self.target[0], str(self.target[1])],
            pass_fds=(fd,), stdin=subprocess.DEVNULL)
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.listener:
            self.listener.close()

    def __enter__(self) -> "PortForward":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (dst,):
            try:
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def _serve(fd: int, host: str, port: int) -> None:
    listener = socket.socket(fileno=fd)
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection((host, port), timeout=10)
            upstream.settimeout(None)
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    _serve(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
