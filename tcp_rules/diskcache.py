"""The on-disk cache: where it lives, and checksummed entries written atomically.

Compiled kernels (codegen.jit), parser tables (grammar.parser) and the checked standard rule
library (rules.libcache) are kept under one root, ``$TCPR_CACHE_DIR`` (default
``$XDG_CACHE_HOME/tcp-rules`` or ``~/.cache/tcp-rules``). Everything here is an optimization: an
entry that is missing, corrupt or unreadable is rebuilt, and a cache that cannot be written is
skipped, silently. This module imports nothing heavy, so that finding the cache costs nothing.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

DIGEST = 32  # bytes of a sha256


def cache_dir() -> Path:
    """The cache root: $TCPR_CACHE_DIR, else the user's cache directory."""
    env = os.environ.get("TCPR_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tcp-rules"


def read_entry(path: Path, magic: bytes) -> bytes | None:
    """The payload stored at ``path`` by :func:`write_entry` with the same ``magic``; None if it
    is absent, unreadable, of another format, or fails its checksum (truncated, corrupt)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(magic) + DIGEST
    if len(data) < head or not data.startswith(magic):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(magic):head]:
        return None
    return payload


def write_entry(path: Path, magic: bytes, payload: bytes) -> bool:
    """Store ``payload`` at ``path`` atomically (a reader sees the old entry or the new one,
    never a part); False, and nothing left behind, when the cache cannot be written."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(magic + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return False
