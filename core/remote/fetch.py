"""Bring a remote bundle back: a gzip'd tar over the SSH channel into one local folder (Qt-free).

The host is not trusted: its manifest and every tar member are checked before a byte is written. Only
regular files and folders with plain relative names are accepted; a symlink, hard link, device, FIFO,
an absolute or `..` path, a name the manifest did not announce, a size larger than announced, or a
total beyond `max_bytes` / the free disk space is refused with one line (FetchError), and the transfer
stops. Files are opened with O_NOFOLLOW under folders created here (never through a link), so nothing
is written outside `dest`. Progress and cancel: `progress(done_bytes, total_bytes)`, `cancel()` -> True.
`fetch_staged` fetches into a hidden folder inside `dest` first and moves the files into place only once
all arrived: a cancelled or refused fetch leaves no partial trace or run.json that would pass for a bundle.
"""
from __future__ import annotations

import os
import shutil
import stat
import tarfile
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from core.remote.runner import Helper, RemoteError

MAX_BYTES = int(float(os.environ.get("PTPROF_FETCH_MAX_GB", "8")) * (1 << 30))
MAX_FILES = 100_000
MAX_DEPTH = 8
STALL_S = 60.0  # no byte from the host for this long: the transfer is given up
CHUNK = 1 << 20


class FetchError(RuntimeError):
    """The bundle could not be brought back; str(exc) is one line."""


class FetchCancelled(FetchError):
    pass


@dataclass(frozen=True, slots=True)
class Fetched:
    dest: Path
    files: int
    bytes: int
    wire_bytes: int  # compressed bytes over the connection
    seconds: float


def safe_name(name: str) -> PurePosixPath | None:
    """A plain relative path (no `..`, no absolute, no empty or dot parts, no NUL / backslash), else None."""
    if not name or "\0" in name or "\\" in name or name.startswith("/"):
        return None
    path = PurePosixPath(name)
    parts = path.parts
    if not parts or len(parts) > MAX_DEPTH or any(p in ("", ".", "..") for p in parts):
        return None
    return path


def _folder(dest: Path, rel: PurePosixPath) -> Path:
    """dest/rel as a real folder: every part created here or an existing folder that is not a link."""
    path = dest
    for part in rel.parts:
        path = path / part
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            os.mkdir(path, 0o755)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise FetchError(f"refused: {path} exists locally and is not a folder (a link is never followed)")
    return path


class _Inflating:
    """The pack stream, gunzipped here so the tar reader never holds more than `limit` bytes in all (a
    hostile 10 GB long-name header would be read into memory by tarfile): counts the compressed bytes,
    checks cancel on every read."""

    def __init__(self, raw, cancel, limit: int):
        self.raw, self.cancel, self.limit = raw, cancel, limit
        self.n = self.out = 0
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buf = b""

    def read(self, size=-1):
        want = CHUNK if size is None or size < 0 else size
        while len(self._buf) < want:
            if self._z.unconsumed_tail:
                data = self._z.unconsumed_tail
            else:
                if self._z.eof:
                    break
                if self.cancel is not None and self.cancel():
                    raise FetchCancelled("fetch cancelled")
                data = self.raw.read1(CHUNK) if hasattr(self.raw, "read1") else self.raw.read(CHUNK)
                if not data:
                    break
                self.n += len(data)
            self._buf += self._z.decompress(data, CHUNK)
        out, self._buf = self._buf[:want], self._buf[want:]
        self.out += len(out)
        if self.out > self.limit:
            raise FetchError("refused: the host sent more data than its manifest announced")
        return out


def fetch(helper: Helper, run_id: str, dest: str | Path, progress=None, cancel=None,
          max_bytes: int = MAX_BYTES) -> Fetched:
    t0 = time.monotonic()
    dest = Path(dest).expanduser().absolute()
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"cannot create {dest}: {exc.strerror or exc}") from None
    if dest.is_symlink() or not dest.is_dir():
        raise FetchError(f"refused: {dest} is not a folder")
    try:
        m = helper.call("manifest", run_id, timeout=120)
    except RemoteError as exc:
        raise FetchError(str(exc)) from None
    announced = _check_manifest(m, dest, max_bytes)
    total = sum(announced.values())
    proc = helper.popen("pack", run_id)
    last = [time.monotonic()]
    stalled = [False]

    def watchdog():  # a host that sends nothing and never closes: the transfer ends, never a hang
        while proc.poll() is None:
            if time.monotonic() - last[0] > STALL_S:
                stalled[0] = True
                proc.kill()
                return
            time.sleep(0.5)
    threading.Thread(target=watchdog, name="ptprof-fetch-watchdog", daemon=True).start()
    stream = _Inflating(proc.stdout, cancel, total + 2048 * (len(announced) + 16) + (16 << 20))
    done = files = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                last[0] = time.monotonic()
                rel = safe_name(member.name)
                if rel is None:
                    raise FetchError(f"refused: the host sent an unsafe path {member.name[:200]!r} in the bundle")
                if member.isdir():
                    _folder(dest, rel)
                    continue
                if not member.isreg():
                    kind = "symlink" if member.issym() else "hard link" if member.islnk() else "device or FIFO"
                    raise FetchError(f"refused: the host sent a {kind} ({member.name[:200]}) in the bundle")
                want = announced.get(str(rel))
                if want is None or member.size > want:
                    raise FetchError(f"refused: the host sent {member.name[:200]} ({member.size} bytes), which its "
                                     "manifest did not announce")
                files += 1
                if files > MAX_FILES:
                    raise FetchError(f"refused: more than {MAX_FILES} files")
                folder = _folder(dest, rel.parent) if rel.parent.parts else dest
                target = folder / rel.name
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "wb") as out:
                    src = tar.extractfile(member)
                    left = member.size
                    while left > 0:
                        chunk = src.read(min(CHUNK, left))
                        if not chunk:
                            raise FetchError(f"the bundle stream ended inside {member.name[:200]}")
                        out.write(chunk)
                        left -= len(chunk)
                        done += len(chunk)
                        last[0] = time.monotonic()
                        if progress is not None:
                            progress(done, total)
    except FetchError:
        proc.kill()
        raise
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as exc:
        proc.kill()
        if stalled[0]:
            raise FetchError(f"the host sent nothing for {STALL_S:.0f} s: fetch given up") from None
        if isinstance(exc, OSError) and exc.filename:
            raise FetchError(f"cannot write {exc.filename}: {exc.strerror or exc}") from None
        err = proc.stderr.read(4096).decode("utf-8", "replace").strip().splitlines() if proc.stderr else []
        raise FetchError(f"the bundle from {helper.host.label} is not a valid archive "
                         f"({type(exc).__name__}{': ' + err[-1][:200] if err else ''})") from None
    except BaseException:  # Ctrl-C, cancel: the stream is not read any more, so the host's pack is ended now
        proc.kill()
        raise
    finally:
        try:
            proc.wait(timeout=10)
        except Exception:
            proc.kill()
    if proc.returncode not in (0, None):
        err = proc.stderr.read(4096).decode("utf-8", "replace").strip().splitlines()
        raise FetchError(f"fetching from {helper.host.label} failed: {err[-1][:300] if err else f'exit {proc.returncode}'}")
    return Fetched(dest, files, done, stream.n, time.monotonic() - t0)


STAGE = ".ptprof-fetch"  # inside the local folder; only fetch_staged writes or removes it


def fetch_staged(helper: Helper, run_id: str, dest: str | Path, progress=None, cancel=None,
                 max_bytes: int = MAX_BYTES) -> Fetched:
    """fetch() into dest/.ptprof-fetch/, then every file moved into dest (replacing the live mirror's copies);
    a failure or a cancel removes the stage, so dest holds only what it held before (FetchError /
    FetchCancelled as fetch raises them)."""
    dest = Path(dest).expanduser().absolute()
    stage = dest / STAGE
    _remove_stage(stage)
    try:
        got = fetch(helper, run_id, stage, progress=progress, cancel=cancel, max_bytes=max_bytes)
        for path in sorted(p for p in stage.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = path.relative_to(stage)
            folder = _folder(dest, PurePosixPath(rel.parent.as_posix())) if rel.parent.parts else dest
            try:
                os.replace(path, folder / rel.name)  # a link there is replaced, never followed
            except OSError as exc:
                raise FetchError(f"cannot move {rel} into {dest}: {exc.strerror or exc}") from None
    finally:
        _remove_stage(stage)
    return Fetched(dest, got.files, got.bytes, got.wire_bytes, got.seconds)


def _remove_stage(stage: Path) -> None:
    if stage.is_symlink():
        stage.unlink()
    elif stage.exists():
        shutil.rmtree(stage, ignore_errors=True)  # rmtree never follows links out of it


def _check_manifest(m: dict, dest: Path, max_bytes: int) -> dict[str, int]:
    files = m.get("files")
    if not isinstance(files, list) or len(files) > MAX_FILES:
        raise FetchError("refused: the host's manifest of the bundle is not a list of files")
    out: dict[str, int] = {}
    for item in files:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], int)
                and not isinstance(item[1], bool) and item[1] >= 0):
            raise FetchError("refused: the host's manifest of the bundle is malformed")
        rel = safe_name(item[0])
        if rel is None:
            raise FetchError(f"refused: the host's manifest names an unsafe path {item[0][:200]!r}")
        out[str(rel)] = item[1]
    total = sum(out.values())
    if total > max_bytes:
        raise FetchError(f"refused: the host says the bundle holds {total / 1e9:.1f} GB, more than the "
                         f"{max_bytes / 1e9:.1f} GB limit (PTPROF_FETCH_MAX_GB)")
    free = shutil.disk_usage(dest).free
    if total > free:
        raise FetchError(f"refused: the bundle holds {total / 1e9:.1f} GB, more than the {free / 1e9:.1f} GB free in {dest}")
    return out
