"""Experiments' progress bars: drawn on a terminal only; log lines pass through either way."""
import io
import sys

from jvmos.experiments import common


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_quiet_when_stdout_is_not_a_terminal(capsys):
    with common.Progress(3, "matmul") as bar:
        common.log("[n=100] socket spa")
        bar.step()
    assert list(common.progress_over("ab", "x")) == ["a", "b"]
    err = capsys.readouterr().err
    assert err == "[n=100] socket spa\n"


def test_a_bar_with_an_eta_on_a_terminal(monkeypatch):
    tty, err = Tty(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", tty)
    monkeypatch.setattr(sys, "stderr", err)
    with common.Progress(4, "matmul", unit="cell") as bar:
        bar.step(2)
        common.log("a line above the bar")
    text = err.getvalue()
    assert "matmul:" in text and "2/4" in text and "ETA" in text
    assert "a line above the bar" in text
