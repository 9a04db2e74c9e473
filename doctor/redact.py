"""Keep secrets out of everything rldoctor prints or writes.

Ray's token authentication reads the token from RAY_AUTH_TOKEN, the file named by
RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token. rldoctor never records the token on
purpose; `redact(text)` is the last line of defence for text that passes through
(error messages, environment dumps, reports).

`Redactor` is the full net, for text and for nested data, used by the incident
bundle before anything is written, and by `redact` for every report and snapshot. It
masks, and counts (never keeping the values):
- the cluster's auth token, wherever it appears;
- every value of `env_vars` (runtime_env of jobs, actors, tasks; also inside the
  JSON strings Ray serializes runtime envs to, and echoed in log lines);
- values of secret-looking keys (key, token, secret, password, credential, auth;
  case-insensitive; at any depth) in data;
- in text, the shapes of SHAPES, one table shared by reports, bundles and notes:
  `key=value`, `key: value`, `"key": "value"`, `--key value`, `API_KEY value`, `-p PASSWORD`
  beside a user name, `Authorization:` headers of any scheme (Bearer, Basic, token, ...),
  credentials in URLs (`scheme://user:password@host`, `?sig=`, `&X-Amz-Signature=`, ...),
  tokens of well-known shapes (`hf_`, `sk-`, `ghp_`, `github_pat_`, `xoxb-`, Slack and Discord
  webhook paths, JWTs, ...), AWS key ids and secret keys, private key blocks;
- any value it masked once, wherever it appears again (a key from env_vars echoed in a log);
- Tune configs (`tune_row`): every value except a short allow-list of training settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rldoctor.auth_token import every_token

MASK = "***redacted***"


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
_BENIGN_KEYS = {"keys", "filterkeys", "sortkeys", "sortkey", "primarykey", "foreignkey", "partitionkey",
                "groupkey", "groupkeys", "dictkeys", "subscriptionkeys", "keyfunc", "cachekey"}
# Values that are settings, not secrets: never masked in text, never learned.
_PLAIN_VALUES = {"", "true", "false", "none", "null", "nil", "yes", "no", "on", "off", "enabled",
                 "disabled", "token", "tokens", "required", "optional", "default", "unknown",
                 "bearer", "basic", "digest", "negotiate", "ntlm", "apikey", "bot", "ssws", "oauth",
                 "jwt", "hawk", "aws4-hmac-sha256", MASK.lower()}
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

_KEY_CHARS = r"[A-Za-z0-9_.\-]"
_ENV_BLOCK = re.compile(r"(?P<head>env_vars\\?[\"']?\s*[:=]\s*)\{(?P<body>[^{}]*)\}", re.IGNORECASE)
_ENV_PAIR = re.compile(r"(?P<k>\\?[\"'][^\"'\\]*\\?[\"']\s*:\s*)(?P<q>\\?[\"'])(?P<v>.*?)(?P=q)")
_SECRET_WORDS = ("key", "token", "secret", "passw", "credential", "auth")


# -- the shapes of secrets in text: one table, as data -----------------------------------------

@dataclass(frozen=True)
class Shape:
    """One shape of secret in text. `pattern`'s group `val` is masked (its quotes kept), or the
    whole match when it has none; `judge(match)` may keep a match as it is (prose, settings).
    A line is matched only when it holds one of `triggers` (lower case; () for every line):
    the substring test is cheap, the regular expression is not."""

    kind: str  # what Redactor.counts counts it under
    triggers: tuple[str, ...]
    pattern: re.Pattern
    judge: object = None
    what: str = ""  # for people: what it catches
    replace: object = None  # (redactor, match) -> text, for a shape that masks more than `val`


def _plain(value: str) -> bool:
    """A setting or a word, not a secret: `true`, `none`, `Bearer`, `***redacted***`, ..."""
    value = value.replace('\\"', "").strip("\"'").strip()
    return value.lower() in _PLAIN_VALUES or MASK in value


def _random_looking(value: str) -> bool:
    """Long enough and mixed enough to be a credential rather than a word of a message."""
    value = value.strip("\"'")
    classes = sum(bool(re.search(c, value)) for c in ("[a-z]", "[A-Z]", "[0-9]", r"[^A-Za-z0-9]"))
    return (len(value) >= 8 and classes >= 2) or len(value) >= 24


def _key_value_judge(match) -> bool:
    key, raw = match.group("key"), match.group("val")
    value = raw.replace('\\"', "").strip("\"'")
    return is_secret_key(key) and not _plain(value) \
        and not (value.isdigit() and len(value) < 4) \
        and not (value.isalpha() and value.islower() and len(value) <= 3)  # prose: "token: it"


def _header_judge(match) -> bool:
    value = match.group("val")
    return len(value) >= 6 and not _plain(value)


def _env_name_judge(match) -> bool:
    return is_secret_key(match.group("key")) and _random_looking(match.group("val")) \
        and not _plain(match.group("val"))


# a command that logs in (not `python -u train.py -p config.yaml`: Python's -u is no user name)
_LOGIN = re.compile(r"(?:^|\s)--(?:user|username|login)(?:[\s=]|$)|\b(?:sshpass|mysql|mysqldump|"
                    r"mariadb|psql|pg_dump|mongo|mongosh|redis-cli|smbclient)\b")


def _short_password_judge(match) -> bool:
    """`-p X`: a password beside a user name (`mysql -u root -p X`), not a port (`-p 8080`)."""
    value = match.group("val")
    if match.group("key"):  # --pass X, --pw X: a password wherever it stands
        return not _plain(value)
    return bool(_LOGIN.search(match.string)) and not value.isdigit() and not _plain(value)


def _aws_secret_judge(match) -> bool:
    """A run of exactly 40 (not a longer base64 blob: no `=` padding after it) of mixed case
    and digits (a Ray id or a git hash is lower-case hex), not a path."""
    value = match.group(0)
    if value.count("/") >= 4:  # a path (a random key holds 4 slashes once in 250)
        return False
    return len(value) == 40 and match.string[match.end():match.end() + 1] != "=" \
        and bool(re.search("[a-z]", value) and re.search("[A-Z]", value) and re.search("[0-9]", value))


def _not_masked(match) -> bool:
    return MASK not in match.group("val")


_VALUE = r"(?P<val>\\\"(?:[^\\\n]|\\[^\"\n])*?\\\"|\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'{}\[\])<>][^\s,;&\"'}\])<>]*)"
_I = re.IGNORECASE

SHAPES: tuple[Shape, ...] = (
    Shape("url_credentials", ("://",), re.compile(
        r"\b[A-Za-z][A-Za-z0-9+.\-]*://(?P<val>[^\s/@\"'<>]+)@"), _not_masked,
        "a user and password in a URL: scheme://user:password@host"),
    Shape("env_vars", ("env_vars",), _ENV_BLOCK, None,
          "every value of a runtime env's env_vars echoed in text",
          replace=lambda redactor, match: redactor._env_block(match)),
    Shape("url_credentials", ("?", "&"),
          re.compile(r"[?&;](?P<key>sig|signature|x-amz-signature|x-amz-credential|"
                     r"x-amz-security-token|x-goog-signature|x-goog-credential|sas|code|pwd|pass|"
                     r"passwd|password|token|access_token|id_token|refresh_token|api_key|apikey|"
                     r"key|secret|client_secret)=(?P<val>[^&\s\"'#<>]+)", _I), _not_masked,
          "a credential in a URL's query: ?sig= (Azure SAS), &X-Amz-Signature=, ?token=, ..."),
    Shape("authorization_headers", ("digest",), re.compile(
        r"\bDigest[ \t]+(?P<val>(?:username|realm|nonce|uri|response|opaque|qop|nc|cnonce|algorithm)"
        r"=[^\n]*)", _I), _not_masked, "an Authorization header's Digest parameters: the rest of the line"),
    Shape("authorization_headers", ("auth",), re.compile(
        r"\b(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[ \t]*"
        r"(?:(?P<scheme>Bearer|Basic|token|Negotiate|NTLM|Bot|SSWS|ApiKey|Key|AWS4-HMAC-SHA256|"
        r"AWS|OAuth|JWT|Hawk)[ \t]+)?(?P<val>[^\s\"'\\,;]+(?:,[ \t]*[A-Za-z]+=[^\s\"'\\,;]+)*)", _I),
          _header_judge, "an Authorization header, any scheme: Bearer, Basic, token, Digest, ..."),
    Shape("authorization_headers", ("bearer", "basic"), re.compile(
        r"\b(?:Bearer|Basic)[ \t]+(?P<val>[A-Za-z0-9._~+/=\-]{8,})"), _header_judge,
          "Bearer or Basic credentials without the header's name"),
    Shape("token_shapes", ("hf_",), re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}"), None,
          "a Hugging Face token: hf_..."),
    Shape("token_shapes", ("sk-", "k_live_", "k_test_"), re.compile(
        r"(?<![A-Za-z0-9])(?:sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}|"
        r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,})"), None,
          "an OpenAI, Anthropic or Stripe key: sk-..., sk-proj-..., sk_live_..."),
    Shape("token_shapes", ("gh",), re.compile(
        r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), None,
          "a GitHub token: ghp_, gho_, ghu_, ghs_, ghr_, github_pat_"),
    Shape("token_shapes", ("xox", "xapp-"), re.compile(
        r"(?<![A-Za-z0-9])(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,})"), None,
          "a Slack token: xoxb-, xoxp-, xapp-"),
    Shape("token_shapes", ("hooks.slack", "webhooks"), re.compile(
        r"(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks)"
        r"/(?P<val>[A-Za-z0-9_/\-]+)", _I), _not_masked,
          "a Slack or Discord webhook's path: hooks.slack.com/services/..."),
    Shape("token_shapes", ("glpat-", "aiza", "npm_", "pypi-", "eyj"), re.compile(
        r"(?<![A-Za-z0-9])(?:glpat-[A-Za-z0-9_\-]{20,}|AIza[0-9A-Za-z_\-]{35}|npm_[A-Za-z0-9]{36}|"
        r"pypi-[A-Za-z0-9_\-]{40,}|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})"),
          None, "a GitLab, Google API, npm or PyPI token, a JWT"),
    Shape("aws_key_ids", ("akia", "asia"), re.compile(
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"), None,
          "an AWS access key id: AKIA..., ASIA..."),
    Shape("aws_secret_keys", (), re.compile(r"[A-Za-z0-9/+]{40,}"),  # whole runs: one pass
          _aws_secret_judge, "an AWS secret access key: 40 characters of mixed case and digits, "
          "wherever it stands (beside its key id, after a plain word)"),
    Shape("secret_keys_in_text", _SECRET_WORDS, re.compile(
        r"(?<![A-Za-z0-9_.\-/])(?P<key>" + _KEY_CHARS + r"*?(?:key|token|secret|passw|credential|auth)"
        + _KEY_CHARS + r"*)(?P<close>\\?[\"'])?[ \t]*[:=][ \t]*" + _VALUE, _I), _key_value_judge,
          "a secret-looking key's value: key=value, key: value, \"key\": \"value\""),
    Shape("secret_keys_in_text", _SECRET_WORDS, re.compile(
        r"(?<![A-Za-z0-9_\-])(?P<key>--?[A-Za-z0-9_\-]*(?:key|token|secret|passw|credential|auth)"
        r"[A-Za-z0-9_\-]*)[ \t]+(?P<val>[^\s\-][^\s]*)", _I), _key_value_judge,
          "a secret-looking flag's value: --api-key X, --password X"),
    Shape("secret_keys_in_text", _SECRET_WORDS + ("pwd",), re.compile(
        r"(?<![A-Za-z0-9_])(?P<key>[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|CREDENTIALS?|"
        r"AUTH)[A-Z0-9_]*)[ \t]+(?P<val>[^\s\"',;=\-][^\s\"',;]*)"), _env_name_judge,
          "an environment variable's name then its value: WANDB_API_KEY 3f2c..."),
    Shape("password_flags", ("-p", "--pw"), re.compile(
        r"(?<![A-Za-z0-9_\-])(?:(?P<key>--(?:pass|pw|pwd))(?:[ \t]+|=)|-p[ \t]*)"
        r"(?P<val>[^\s\"'\-][^\s\"']*)"),
          _short_password_judge, "a password flag beside a user name: mysql -u root -p X, "
          "sshpass -p X, --pass X"),
)
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
                          re.DOTALL)
_EVERY_LINE = tuple(shape for shape in SHAPES if not shape.triggers)
_BY_TRIGGER = tuple(shape for shape in SHAPES if shape.triggers)
_TRIGGERS = tuple(sorted({t for shape in _BY_TRIGGER for t in shape.triggers}))

# What Redactor.counts counts, by kind.
REDACTION_KINDS = ("auth_token", "env_vars", "secret_keys", "secret_keys_in_text", "known_values",
                   "url_credentials", "authorization_headers", "private_keys", "aws_key_ids",
                   "tune_config", "token_shapes", "aws_secret_keys", "password_flags")

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
        for shape in _EVERY_LINE:
            text = self._apply(shape, text)
        lower = text.lower()
        found: dict[int, set[str]] = {}  # line start -> the triggers it holds
        for trigger in _TRIGGERS:  # str.find runs in C: far faster than a regex or a loop of lines
            at = lower.find(trigger)
            while at >= 0:
                found.setdefault(lower.rfind("\n", 0, at) + 1, set()).add(trigger)
                end = lower.find("\n", at)
                at = lower.find(trigger, end) if end >= 0 else -1
        if not found:
            return text
        out, done = [], 0
        for start in sorted(found):
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            out += [text[done:start], self._line(text[start:end], found[start])]
            done = end
        out.append(text[done:])
        return "".join(out)

    def _known_pattern(self, values: list[str]):
        key = tuple(sorted(values, key=len, reverse=True))
        if self._known_re is None or self._known_re[0] != key:
            self._known_re = (key, re.compile(
                "(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, key)) + ")(?![A-Za-z0-9])"))
        return self._known_re[1]

    def _line(self, line: str, triggers: set[str]) -> str:
        for shape in _BY_TRIGGER:
            if not triggers.isdisjoint(shape.triggers):
                line = self._apply(shape, line)
        return line

    def _apply(self, shape: Shape, text: str) -> str:
        if shape.replace is not None:
            return shape.pattern.sub(lambda match: shape.replace(self, match), text)

        def mask(match) -> str:
            if shape.judge is not None and not shape.judge(match):
                return match.group(0)
            self._count(shape.kind)
            if "val" not in match.re.groupindex:
                return MASK
            raw = match.group("val")
            quote = raw[:2] if raw.startswith('\\"') else (raw[0] if raw[:1] in "\"'" else "")
            start, end = match.start("val") - match.start(), match.end("val") - match.start()
            whole = match.group(0)
            return whole[:start] + quote + MASK + quote + whole[end:]

        return shape.pattern.sub(mask, text)

    def _env_block(self, match) -> str:
        def value(pair):
            if pair.group("v") == MASK:
                return pair.group(0)
            self._count("env_vars")
            return pair.group("k") + pair.group("q") + MASK + pair.group("q")

        return match.group("head") + "{" + _ENV_PAIR.sub(value, match.group("body")) + "}"

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
