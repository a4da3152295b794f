"""How one invocation ended, judged as a user of the command line would: ok (exit 0), refused (exit
2 and exactly one line on stderr, the product's own ``stepscope: error: ...``), crash (a traceback,
any other exit code, a death by signal, or an error of more than one line), hang (past the timeout)."""

from __future__ import annotations

import re

OK, REFUSED, CRASH, HANG = "ok", "refused", "crash", "hang"
OUTCOMES = [OK, REFUSED, CRASH, HANG]
_FRAME = re.compile(r'File "([^"]*stepscope/[^"]*)", line \d+,? in (\S+)')
_WARNING = re.compile(r"\b\w*Warning: ")


def classify(rc: int | None, stderr: str) -> str:
    """The outcome of an invocation that ended with ``rc`` (None: it did not end in time)."""
    if rc is None:
        return HANG
    if "Traceback (most recent call last)" in stderr:
        return CRASH
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if rc == 0:
        return OK
    if rc == 2 and len(lines) == 1 and lines[0].startswith("stepscope: error: "):
        return REFUSED
    return CRASH


def noisy(rc: int | None, stderr: str) -> bool:
    """An ok run that still printed a Python warning (numpy's ``RuntimeWarning`` ...) on stderr."""
    return rc == 0 and bool(_WARNING.search(stderr))


def signature(outcome: str, rc: int | None, stderr: str, stack: str = "") -> str:
    """What groups crashes of one cause: the exception and the innermost stepscope function it went
    through; for a hang, the innermost stepscope function running when it was stopped."""
    if outcome == HANG:
        frames = _FRAME.findall(stack)
        return f"hang in {_where(frames[0])}" if frames else "hang"
    if outcome != CRASH:
        return outcome
    if "Traceback (most recent call last)" in stderr:
        tail = [ln for ln in stderr.splitlines() if ln.strip()][-1]
        exc = tail.split(":", 1)[0].strip()
        frames = _FRAME.findall(stderr)
        return f"{exc} in {_where(frames[-1])}" if frames else exc
    if rc is not None and rc < 0:
        return f"killed by signal {-rc}"
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if rc == 2:
        return f"{len(lines)}-line error: {(lines or [''])[0][:80]}"
    return f"exit {rc}: {(lines or [''])[-1][:80]}"


def _where(frame: tuple[str, str]) -> str:
    path, func = frame
    return f"{path[path.rindex('stepscope/'):]}:{func}"
