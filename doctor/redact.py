"""Keep secrets out of everything rldoctor prints or writes.

Ray's token authentication reads the token from RAY_AUTH_TOKEN, the file named by
RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token. rldoctor never records the token on
purpose; `redact(text)` is the last line of defence for text that passes through
(error messages, environment dumps, reports).

`Redactor` is the full net, for text and for nested data, used by the incident
bundle before anything is written. It masks, and counts (never keeping the values):
- the cluster's auth token, wherever it appears;
- every value of `env_vars` (runtime_env of jobs, actors, tasks; also inside the
  JSON strings Ray serializes runtime envs to, and echoed in log lines);
- values of secret-looking keys (key, token, secret, password, credential, auth;
  case-insensitive; at any depth), in data and in text (`key=value`, `key: value`,
  `"key": "value"`, `--key value`), and `Authorization: Bearer ...` headers;
- credentials in URLs (`scheme://user:password@host`), private key blocks, AWS key ids;
- any value it masked once, wherever it appears again (a key from env_vars echoed in a log);
- Tune configs (`tune_row`): every value except a short allow-list of training settings.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from rldoctor.auth_token import every_token

MASK = "***redacted***"
_TOKENISH_KEYS = re.compile(r"(RAY_AUTH_TOKEN|authorization|bearer)(\W{1,4})([A-Za-z0-9._\-]{8,})",
                            re.IGNORECASE)


@lru_cache(maxsize=1)
def _secrets() -> tuple[str, ...]:
    return every_token()


def redact(text: str) -> str:
    """`text` with the auth token and secret-looking values masked."""
    return _DEFAULT.text(text)


# -- the full redactor ------------------------------------------------------------------------

_SECRET_PART = re.compile(r"key|token|secret|passw|credential|auth", re.IGNORECASE)
# A secret-looking key whose last word says it describes a secret rather than holds one.
_DESCRIPTIVE = {"mode", "modes", "enabled", "disabled", "type", "kind", "method", "methods",
                "required", "use", "path", "file", "dir", "source", "count", "name", "names",
                "len", "length", "size", "url", "uri", "endpoint", "host", "port", "expiry",
                "expires", "ttl", "provider", "set", "present", "configured", "env", "var",
                # an exception's name (KeyError: 'num_workers', AuthenticationError: ...)
                "error", "errors", "exception"}
_BENIGN_WORDS = {"monkey", "donkey", "turkey", "keyboard", "keystroke", "keyword", "keywords",
                 "hotkey", "author", "authors", "authored", "tokenizer", "tokenizers",
                 "tokenize", "tokenized", "keyed"}
# Whole keys (separators dropped) that name keys of a table, not secrets: Ray's own
# `filter_keys=` query parameter, JSON's `sort_keys`, ...
_BENIGN_KEYS = {"filterkeys", "sortkeys", "sortkey", "primarykey", "foreignkey", "partitionkey",
                "groupkey", "groupkeys", "dictkeys", "subscriptionkeys", "keyfunc", "cachekey"}
# Values that are settings, not secrets: never masked in text, never learned.
_PLAIN_VALUES = {"", "true", "false", "none", "null", "nil", "yes", "no", "on", "off", "enabled",
                 "disabled", "token", "tokens", "required", "optional", "default", "unknown",
                 "bearer", "basic", MASK.lower()}
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

_KEY_CHARS = r"[A-Za-z0-9_.\-]"
_KV = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<key>" + _KEY_CHARS + r"*?(?:key|token|secret|passw|credential|auth)"
    + _KEY_CHARS + r"*)(?P<close>\\?[\"'])?(?P<sep>[ \t]*[:=][ \t]*)"
    r"(?P<val>\\\"(?:[^\\\n]|\\[^\"\n])*?\\\"|\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'{}\[\])<>][^\s,;&\"'}\])<>]*)",
    re.IGNORECASE)
_FLAG = re.compile(
    r"(?<![A-Za-z0-9_\-])(?P<key>--?[A-Za-z0-9_\-]*(?:key|token|secret|passw|credential|auth)"
    r"[A-Za-z0-9_\-]*)(?P<sep>[ \t]+)(?P<val>[^\s\-][^\s]*)", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<cred>[^\s/@\"'<>]+)@")
_HEADER = re.compile(r"\b(?P<scheme>Bearer|Basic)(?P<sep>\s+)(?P<val>[A-Za-z0-9._~+/=\-]{8,})")
_ENV_BLOCK = re.compile(r"(?P<head>env_vars\\?[\"']?\s*[:=]\s*)\{(?P<body>[^{}]*)\}", re.IGNORECASE)
_ENV_PAIR = re.compile(r"(?P<k>\\?[\"'][^\"'\\]*\\?[\"']\s*:\s*)(?P<q>\\?[\"'])(?P<v>.*?)(?P=q)")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
                          re.DOTALL)
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_SECRET_WORDS = ("key", "token", "secret", "passw", "credential", "auth")
_TRIGGERS = _SECRET_WORDS + ("://", "env_vars", "bearer", "basic", "akia", "asia")

# What Redactor.counts counts, by kind.
REDACTION_KINDS = ("auth_token", "env_vars", "secret_keys", "secret_keys_in_text", "known_values",
                   "url_credentials", "authorization_headers", "private_keys", "aws_key_ids",
                   "tune_config")

# Tune result rows embed the whole training config; only these settings stay readable.
TRAINING_SETTINGS = frozenset({
    "env", "framework", "lr", "gamma", "lambda_", "lambda", "train_batch_size",
    "train_batch_size_per_learner", "minibatch_size", "num_epochs", "num_env_runners",
    "num_envs_per_env_runner", "rollout_fragment_length", "batch_mode", "num_learners",
    "num_gpus_per_learner", "num_cpus_per_env_runner", "num_cpus_for_main_process",
    "clip_param", "vf_clip_param", "entropy_coeff", "vf_loss_coeff", "kl_coeff", "kl_target",
    "grad_clip", "use_gae", "use_kl_loss", "seed", "sample_timeout_s",
    "restart_failed_env_runners", "ignore_env_runner_failures",
    "max_requests_in_flight_per_env_runner", "model_config", "fcnet_hiddens", "fcnet_activation",
    "enable_rl_module_and_learner", "enable_env_runner_and_connector_v2",
})


def _words(key: str) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(key) if w]


def is_secret_key(key: str) -> bool:
    """Does a key (a dict key, an env var name, a flag) look like it holds a secret?"""
    if not isinstance(key, str) or not _SECRET_PART.search(key):
        return False
    words = _words(key)
    if not words or words[-1] in _DESCRIPTIVE or "".join(words) in _BENIGN_KEYS:
        return False
    return any(_SECRET_PART.search(w) and w not in _BENIGN_WORDS for w in words)


def _learnable(value: str) -> bool:
    """Worth masking wherever it appears again: long enough, and not a plain word or path."""
    value = value.strip()
    if len(value) < 6 or value.lower() in _PLAIN_VALUES or value == MASK:
        return False
    if value.startswith(("/", "./", "~/")) and "@" not in value and "=" not in value:
        return False  # a directory in PYTHONPATH-like settings: masking it would blank tracebacks
    if value.isdigit() and len(value) < 8:
        return False
    return not (value.isalpha() and value.islower() and len(value) < 12)


class Redactor:
    """Masks secrets in text and nested data, counting what it masked by kind.

    `learn(data)` first, on every structured source (job and actor runtime envs, Tune
    results), so that the values it finds are masked in free text (logs) too.
    """

    def __init__(self, extra_secrets: tuple[str, ...] = ()):
        self.counts: dict[str, int] = {}
        self._token = tuple(_secrets())
        self._known: set[str] = set(s for s in extra_secrets if s)
        self._known_re = None

    # -- bookkeeping --------------------------------------------------------------------------
    def _count(self, kind: str, n: int = 1) -> None:
        if n:
            self.counts[kind] = self.counts.get(kind, 0) + n

    def add_secret(self, value) -> None:
        """Mask `value` wherever it appears from now on (when it is long enough to be a secret)."""
        if isinstance(value, str) and _learnable(value) and value not in self._known:
            self._known.add(value.strip())
            self._known_re = None

    def learn(self, data) -> None:
        """Remember the env_vars values and secret-key values in `data`, changing nothing."""
        if isinstance(data, dict):
            hint = data.get("name") if isinstance(data.get("name"), str) else data.get("key")
            for key, value in data.items():
                key = str(key)
                if key.lower() == "env_vars" or is_secret_key(key) or (
                        key == "value" and isinstance(hint, str) and is_secret_key(hint)):
                    for leaf in _leaves(value):
                        self.add_secret(leaf)
                elif isinstance(value, str) and key.lower().endswith("runtime_env"):
                    parsed = _json_object(value)
                    if parsed is not None:
                        self.learn(parsed)
                else:
                    self.learn(value)
        elif isinstance(data, (list, tuple)):
            for item in data:
                self.learn(item)
        elif isinstance(data, str) and "env_vars" in data:
            for block in _ENV_BLOCK.finditer(data):
                for pair in _ENV_PAIR.finditer(block.group("body")):
                    self.add_secret(pair.group("v"))

    # -- text ---------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """`text` with every secret it can recognize masked.

        Cheap substring tests decide which patterns can match at all, and the patterns
        then run on the lines that hold their trigger only: Python's regex engine is slow
        on a whole log, `in` is not.
        """
        if not text:
            return text
        if "PRIVATE KEY-----" in text:
            text, n = _PRIVATE_KEY.subn(MASK, text)
            self._count("private_keys", n)
        for token in self._token:
            if token in text:
                self._count("auth_token", text.count(token))
                text = text.replace(token, MASK)
        present = [v for v in self._known if v in text]
        if present:
            text, n = self._known_pattern(present).subn(MASK, text)
            self._count("known_values", n)
        lower = text.lower()
        if not any(trigger in lower for trigger in _TRIGGERS):
            return text
        lines = text.split("\n")
        for i, line in enumerate(lines):
            low = line.lower()
            if any(trigger in low for trigger in _TRIGGERS):
                lines[i] = self._line(line, low)
        return "\n".join(lines)

    def _known_pattern(self, values: list[str]):
        key = tuple(sorted(values, key=len, reverse=True))
        if self._known_re is None or self._known_re[0] != key:
            self._known_re = (key, re.compile(
                "(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, key)) + ")(?![A-Za-z0-9])"))
        return self._known_re[1]

    def _line(self, line: str, low: str) -> str:
        if "://" in line:
            line, n = _URL_CREDENTIALS.subn(lambda m: m.group("scheme") + MASK + "@"
                                            if m.group("cred") != MASK else m.group(0), line)
            self._count("url_credentials", n)
        if "env_vars" in low:
            line = _ENV_BLOCK.sub(self._env_block, line)
        if "bearer" in low or "basic" in low:
            line = _HEADER.sub(self._header, line)
        if any(word in low for word in _SECRET_WORDS):
            line = _KV.sub(self._key_value, line)
            if "-" in line:
                line = _FLAG.sub(self._key_value, line)
        if "akia" in low or "asia" in low:
            line, n = _AWS_KEY_ID.subn(MASK, line)
            self._count("aws_key_ids", n)
        return line

    def _env_block(self, match) -> str:
        def value(pair):
            if pair.group("v") == MASK:
                return pair.group(0)
            self._count("env_vars")
            return pair.group("k") + pair.group("q") + MASK + pair.group("q")

        return match.group("head") + "{" + _ENV_PAIR.sub(value, match.group("body")) + "}"

    def _header(self, match) -> str:
        if match.group("val") == MASK:
            return match.group(0)
        self._count("authorization_headers")
        return match.group("scheme") + match.group("sep") + MASK

    def _key_value(self, match) -> str:
        key, raw = match.group("key"), match.group("val")
        value = raw.replace('\\"', "").strip("\"'")
        if not is_secret_key(key) or value.strip().lower() in _PLAIN_VALUES or MASK in value \
                or (value.isdigit() and len(value) < 4) \
                or (value.isalpha() and value.islower() and len(value) <= 3):  # prose: "token: it"
            return match.group(0)
        self._count("secret_keys_in_text")
        quote = raw[:2] if raw.startswith('\\"') else (raw[0] if raw[:1] in "\"'" else "")
        end = quote if quote else ""
        start = match.start("val") - match.start()
        return match.group(0)[:start] + quote + MASK + end

    # -- data ---------------------------------------------------------------------------------
    def data(self, data):
        """A copy of `data` (dicts, lists, scalars) with secrets masked; strings go through text()."""
        if isinstance(data, dict):
            hint = data.get("name") if isinstance(data.get("name"), str) else data.get("key")
            out = {}
            for key, value in data.items():
                name = str(key)
                if name.lower() == "env_vars":
                    out[key] = self._mask(value, "env_vars")
                elif is_secret_key(name) or (name == "value" and isinstance(hint, str)
                                             and is_secret_key(hint)):
                    out[key] = self._mask(value, "secret_keys")
                elif isinstance(value, str) and name.lower().endswith("runtime_env") \
                        and _json_object(value) is not None:
                    import json

                    out[key] = json.dumps(self.data(_json_object(value)))
                else:
                    out[key] = self.data(value)
            return out
        if isinstance(data, (list, tuple)):
            return [self.data(item) for item in data]
        if isinstance(data, str):
            return self.text(data)
        return data

    def _mask(self, value, kind: str):
        """Every scalar under a secret key (booleans and None say nothing and stay)."""
        if isinstance(value, dict):
            return {k: self._mask(v, kind) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._mask(v, kind) for v in value]
        if value is None or isinstance(value, bool) or value == MASK:
            return value
        self.add_secret(value if isinstance(value, str) else None)
        self._count(kind)
        return MASK

    def tune_row(self, row: dict) -> dict:
        """A Tune result row: its `config` cut to the training settings, the rest as data()."""
        if not isinstance(row, dict):
            return self.data(row)
        out = self.data({k: v for k, v in row.items() if k != "config"})
        if "config" in row:
            out["config"] = self._allow_listed(row["config"])
        return out

    def _allow_listed(self, config):
        if isinstance(config, dict):
            out = {}
            for key, value in config.items():
                if str(key) in TRAINING_SETTINGS and not isinstance(value, dict):
                    out[key] = self.data(value)
                elif isinstance(value, dict):
                    out[key] = self._allow_listed(value)
                elif value is None or isinstance(value, bool) or value == MASK:
                    out[key] = value
                else:
                    if is_secret_key(str(key)):
                        self.add_secret(value if isinstance(value, str) else None)
                    self._count("tune_config")
                    out[key] = MASK
            return out
        return self._mask(config, "tune_config")


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, str):
        yield value


def _json_object(text: str):
    if not text.lstrip().startswith("{"):
        return None
    import json

    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


_DEFAULT = Redactor()
