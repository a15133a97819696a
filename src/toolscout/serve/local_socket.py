"""The local socket where a running `toolscout serve` answers this machine's command line.

`serve` (either transport) also listens on a Unix socket whose path is derived from the config
file's resolved path and from the configuration it loaded, so a command run with the same config
file finds it, and one whose config differs (another file, or the same file edited since) never
does. There, streamable HTTP serves the discovery meta-tools at /mcp (cli/answers.py asks
them), whatever mode `serve` shows its own clients.

The socket lives in `$XDG_RUNTIME_DIR/toolscout` (else `toolscout-<uid>` in the temporary
directory), a directory only its owner may enter, and has the config file's permissions (at least
read and write for the owner): whoever may not read the config may not ask its gateway either.
A socket left by a serve that was killed is found stale (nothing accepts on it) and removed. The
socket's lock file goes with it, and with a serve that ends.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import socket
import stat
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolscout.config import GatewayConfig

logger = logging.getLogger(__name__)

SOCKET_HOST = "toolscout.local"
"""The Host of requests over the socket. Not a local name: the SDK's DNS-rebinding check guards
localhost ports against web pages, and a Unix socket is reached only through the file system."""
PROBE_SECONDS = 1.0
"""How long a connection to a socket may take before its serve is taken as not answering."""
_MAX_PATH = 100
"""A Unix socket's path is limited to 104-108 bytes, by platform."""


def runtime_dir() -> Path:
    """Where the sockets of running gateways are: `$XDG_RUNTIME_DIR/toolscout` (the user's own
    runtime directory), else `toolscout-<uid>` in the temporary directory."""
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "toolscout"
    return Path(tempfile.gettempdir()) / f"toolscout-{os.getuid()}"


def socket_path(config_file: Path, config: GatewayConfig) -> Path | None:
    """The socket of a `serve` of `config`, loaded from `config_file`; None where there can be none
    (no Unix sockets, or a path too long for one)."""
    if not hasattr(socket, "AF_UNIX"):
        return None
    # What the file says (after `${VAR}`s): defaults drawn from the environment (the audit log's
    # path) would tell apart a serve and a command whose servers and rules are the same.
    identity = f"{config_file.resolve()}\0{config.model_dump_json(by_alias=True, exclude_defaults=True)}"
    path = runtime_dir() / f"{hashlib.sha256(identity.encode()).hexdigest()[:24]}.sock"
    return path if len(os.fsencode(path)) <= _MAX_PATH else None


def socket_mode(config_file: Path) -> int:
    """The socket's permissions: the config file's read and write bits, at least read and write for the owner."""
    return (stat.S_IMODE(config_file.stat().st_mode) & 0o666) | 0o600


def _private(directory: Path, *, create: bool) -> bool:
    """Whether `directory` is ours alone (made so when `create`): owned by us, entered by no one else."""
    if create:
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700, parents=True)
    try:
        info = directory.lstat()
    except FileNotFoundError:
        return False
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    if not private:
        logger.warning("%s is not a directory of this user's alone; no command-line socket there", directory)
    return private


@contextlib.contextmanager
def socket_lock(path: Path, *, wait: bool) -> Generator[bool]:
    """Hold the lock of the socket at `path` (checking, removing and binding it happen under it);
    yields whether it was got (without `wait`, not when another process holds it)."""
    import fcntl

    lock = path.with_suffix(".lock")
    while True:
        handle = open(lock, "a")  # noqa: SIM115 (closed on every way out below)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            yield False
            return
        # A serve that left may have removed the file between our opening and our locking it: a
        # lock on a removed file guards nothing, so open the one at the path again.
        try:
            here = os.stat(lock)
        except FileNotFoundError:
            handle.close()
            continue
        held = os.fstat(handle.fileno())
        if (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino):
            break
        handle.close()
    with handle:
        yield True


def _probe(path: Path) -> bool | None:
    """True when a serve accepts on `path`, False when nothing does (no socket, or a stale one),
    None when it could not be told (a socket that does not accept in time)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(PROBE_SECONDS)
    try:
        probe.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        return False
    except OSError as exc:
        return False if exc.errno in (errno.ENOTSOCK, errno.ENOENT) else None
    finally:
        probe.close()
    return True


def _is_our_socket(path: Path) -> bool:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid()


def listen(path: Path, config_file: Path) -> socket.socket | None:
    """A socket listening at `path` with the permissions of `config_file`, or None when another
    serve of the same config listens there already, or it cannot be made (logged)."""
    try:
        if not _private(path.parent, create=True):
            return None
        with socket_lock(path, wait=True):
            if path.exists() or path.is_symlink():
                if _probe(path) is not False:
                    logger.info("another toolscout serve of this config answers the command line at %s", path)
                    return None
                path.unlink()  # stale: its serve is gone
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(str(path))
                os.chmod(path, socket_mode(config_file))
                sock.listen(64)
            except BaseException:
                sock.close()
                raise
    except OSError as exc:
        logger.warning("not answering the command line at %s: %s", path, exc)
        return None
    logger.info("answering the command line at %s", path)
    return sock


def release(path: Path, sock: socket.socket) -> None:
    """Close `sock` and remove its file and its lock file, unless another serve's socket has taken
    its place (which keeps both)."""
    sock.close()
    with contextlib.suppress(OSError), socket_lock(path, wait=True):
        if _is_our_socket(path) and _probe(path) is not False:
            return  # another serve's, answering
        if _is_our_socket(path):
            path.unlink()
        # Removed while held: whoever opened it meanwhile finds it gone once locked, and opens the
        # path again (`socket_lock`).
        path.with_suffix(".lock").unlink(missing_ok=True)


def serving(path: Path) -> bool:
    """Whether a `serve` answers at `path`: a socket of ours in a directory of ours that accepts.
    A stale one (its serve gone) is removed."""
    if not _is_our_socket(path) or not _private(path.parent, create=False):
        return False
    answer = _probe(path)
    if answer is False:
        with contextlib.suppress(OSError), socket_lock(path, wait=False) as locked:
            if locked and _is_our_socket(path) and _probe(path) is False:
                path.unlink()
                path.with_suffix(".lock").unlink(missing_ok=True)  # (while held: see `release`)
                logger.info("removed the stale socket %s (its serve is gone)", path)
    return answer is True


def serving_sockets() -> list[Path]:
    """The sockets of every `serve` of this user that answers on this machine, whatever its config
    (`toolscout config reload` asks each which file it follows: a file edited since its serve
    started no longer leads to that serve's socket by `socket_path`)."""
    directory = runtime_dir()
    if not hasattr(socket, "AF_UNIX") or not _private(directory, create=False):
        return []
    return [path for path in sorted(directory.glob("*.sock")) if serving(path)]
