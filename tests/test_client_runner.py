"""`run_python`, the runner of every client script: work that printed its answer passes even
when the interpreter would crash at exit; a crash or an error before the answer still fails."""

from __future__ import annotations

import signal

from tests.support.common import run_python

# atexit handlers run during interpreter finalization, where Daft's native threads crashed.
CRASH_AT_EXIT = "import atexit, os\natexit.register(os.abort)\n"


def test_a_crash_during_finalization_after_the_answer_does_not_fail() -> None:
    done = run_python(CRASH_AT_EXIT + "import sys\nprint('answer', sys.argv[1:])\n", "a", "b")
    assert (done.returncode, done.stdout) == (0, "answer ['a', 'b']\n")


def test_the_answer_is_flushed_before_leaving() -> None:
    done = run_python("import sys\nsys.stdout.write('x' * 100_000)\n")
    assert (done.returncode, len(done.stdout)) == (0, 100_000)


def test_a_crash_before_the_answer_fails() -> None:
    done = run_python("import os\nos.abort()\nprint('answer')\n")
    assert done.returncode == -signal.SIGABRT
    assert done.stdout == ""


def test_an_error_before_the_answer_fails() -> None:
    done = run_python("raise RuntimeError('no answer')\nprint('answer')\n")
    assert done.returncode == 1
    assert "RuntimeError: no answer" in done.stderr
