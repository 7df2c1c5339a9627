# -*- coding: utf-8 -*-
"""The launcher's entry point in the user's interpreter: `python -u start.py CHILD-OPTIONS -- SCRIPT ARGS`.

child.py needs CPython 3.9+ (core/runner/compat.py MIN_PYTHON) and does not even compile on 3.6 or 2.7, so
this file - written to compile on any Python from 2.7 on - checks the version first: an older interpreter
gets one line on stderr (and an `exception` + `end` event in the bundle's events.jsonl, exit 2) before
anything starts; a supported one runs child.py as __main__ in this same process.
"""
import os
import sys

MIN_PYTHON = (3, 9)  # = compat.MIN_PYTHON (tests/core/runner/test_compat_pythons.py checks they agree)


def _bundle(argv):
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--bundle" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--bundle="):
            return arg.split("=", 1)[1]
    return None


def _run_key():
    """The run's key, as protocol.take_key reads it (the launcher's pipe, or the environment under torchrun):
    the launcher believes only signed lines (core/runner/auth.py)."""
    import binascii
    hex_key = os.environ.pop("PTPROF_RUN_KEY", None)
    try:
        fd_text = os.environ.pop("PTPROF_KEY_FD", None)
        if fd_text:
            fd = int(fd_text)
            try:
                hex_key = os.read(fd, 1024).decode("ascii").strip()
            finally:
                os.close(fd)
        return binascii.unhexlify(str(hex_key)) if hex_key else None
    except (OSError, ValueError, TypeError):
        return None


def _signed(event, key, n):
    """One events.jsonl line as protocol.EventWriter writes it: "seq", then "mac" (HMAC-SHA256) last."""
    import hashlib
    import hmac
    import json
    if key is None:
        return json.dumps(event, separators=(",", ":"))
    event["seq"] = "%d.%d" % (os.getpid(), n)
    line = json.dumps(event, separators=(",", ":"))
    mac = hmac.new(key, line.encode("ascii"), hashlib.sha256).hexdigest()[:32]
    return line[:-1] + ',"mac":"' + mac + '"}'


def refuse(argv):
    import time
    version = ".".join(str(v) for v in sys.version_info[:3])
    line = ("ptprof: Python %s at %s is too old for ptprof's runner: it needs Python %d.%d or newer "
            "(with torch 2.1 or newer)" % (version, sys.executable, MIN_PYTHON[0], MIN_PYTHON[1]))
    bundle = _bundle(argv)
    try:  # the launcher says the line (ptprof record, the Run panel); stderr only when it cannot hear it
        key = _run_key()
        fd = os.open(os.path.join(bundle, "events.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 420)
        rank = int(os.environ.get("RANK", "0") or 0)
        for n, event in enumerate(({"type": "exception", "message": line[len("ptprof: "):], "traceback": ""},
                                   {"type": "end", "exit_code": 2, "steps": 0, "cycles": 0, "step_source": None})):
            event.update(t_ns=int(time.time() * 1e9), rank=rank)
            os.write(fd, (_signed(event, key, n + 1) + "\n").encode("ascii"))
        os.close(fd)
    except (OSError, ValueError, TypeError, AttributeError):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    return 2


if __name__ == "__main__":
    if tuple(sys.version_info[:2]) < MIN_PYTHON:
        sys.exit(refuse(sys.argv[1:]))
    import runpy
    child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
    sys.argv[0] = child
    runpy.run_path(child, run_name="__main__")
