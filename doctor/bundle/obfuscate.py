"""`--obfuscate`: IP addresses and host names replaced consistently across a bundle.

The same real value always becomes the same stand-in, in every file of the bundle, so
the bundle stays readable ("node 198.18.0.2 lost contact with 198.18.0.1"). The map
from stand-ins back to real values is written beside the bundle, readable by its owner
only, never inside it. IPv4 addresses are replaced (0.0.0.0, 127.0.0.1 and
255.255.255.255 stay: they name no host); host names are those rldoctor knows (the
nodes' and this machine's) and every host named in a URL (`s3://bucket.corp.example/x`,
`http://ray-head.ns.svc:8265`), but localhost and a few public sites that name no one's
infrastructure (PUBLIC_HOSTS). `learn` first, over every file, so that a host met in a URL
in one file is replaced wherever it appears in any other.
"""

from __future__ import annotations

import ipaddress
import json
import re

_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_KEEP = {"0.0.0.0", "127.0.0.1", "255.255.255.255"}
_FAKE_NET = int(ipaddress.IPv4Address("198.18.0.0"))  # RFC 2544 benchmarking range: no real host
# scheme://[user[:password]@]HOST: the host named by a URL
_URL_HOST = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://(?:[^\s/@\"'<>]*@)?"
                       r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*"
                       r"[A-Za-z0-9])?)*)")
PUBLIC_HOSTS = {"localhost", "localhost.localdomain", "docs.ray.io", "ray.io", "github.com",
                "raw.githubusercontent.com", "pypi.org", "files.pythonhosted.org",
                "download.pytorch.org", "pytorch.org", "huggingface.co", "python.org",
                "docs.python.org", "gymnasium.farama.org", "example.com", "example.org"}


class Obfuscator:
    def __init__(self, host_names=()):
        self.ips: dict[str, str] = {}
        self.hosts: dict[str, str] = {}
        self._hosts_re = None
        for name in sorted({h for h in host_names if h and not _IPV4.fullmatch(h)}, key=len,
                           reverse=True):
            self.hosts[name] = f"host-{len(self.hosts) + 1}"
        self._compile()

    def _compile(self) -> None:
        names = sorted(self.hosts, key=len, reverse=True)  # the longest first: a.b.c before a.b
        self._hosts_re = re.compile(
            r"(?<![A-Za-z0-9\-])(?:" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9\-])"
        ) if names else None

    def learn(self, text: str) -> None:
        """Give a stand-in to every host a URL in `text` names (not an IP: those are replaced
        as addresses; not localhost nor a public site)."""
        if "://" not in text:
            return
        added = False
        for match in _URL_HOST.finditer(text):
            host = match.group("host")
            if host in self.hosts or host.lower() in PUBLIC_HOSTS or _IPV4.fullmatch(host) \
                    or host in self.hosts.values() or not any(c.isalpha() for c in host):
                continue
            self.hosts[host] = f"host-{len(self.hosts) + 1}"
            added = True
        if added:
            self._compile()

    def _ip(self, match) -> str:
        real = match.group(0)
        if real in _KEEP or any(int(part) > 255 for part in real.split(".")):
            return real
        if real not in self.ips:
            self.ips[real] = str(ipaddress.IPv4Address(_FAKE_NET + len(self.ips) + 1))
        return self.ips[real]

    def text(self, text: str) -> str:
        self.learn(text)
        text = _IPV4.sub(self._ip, text)
        if self._hosts_re is not None:
            text = self._hosts_re.sub(lambda m: self.hosts[m.group(0)], text)
        return text

    def mapping(self) -> dict:
        """{stand-in: real value}: what the private map file holds."""
        return {"ips": {fake: real for real, fake in self.ips.items()},
                "hosts": {fake: real for real, fake in self.hosts.items()}}

    def write_map(self, path: str) -> None:
        """The map, in a file only its owner can read (0600, whatever the umask), by temp file
        and rename: never through a link at `path` (rldoctor.safe_write)."""
        from rldoctor.errors import Undiagnosable
        from rldoctor.safe_write import PRIVATE, write_file

        write_file(path, json.dumps(self.mapping(), indent=2, sort_keys=True) + "\n",
                   what="the obfuscation map", mode=PRIVATE, error=Undiagnosable)


def map_path(bundle_path: str) -> str:
    """Where the map of a bundle goes: beside it, never inside."""
    return f"{bundle_path}.obfuscation-map.json"
