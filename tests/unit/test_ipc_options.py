"""jvmos run ipc's option parsing: campaigns, primitives and the socket options reach the
workload's command lines only for the socket primitives."""
import pytest

from jvmos import JvmosError
from jvmos.experiments import ipc


def test_socket_options_only_for_socket_primitives():
    a = ipc.parse(["--primitives", "sockets,xmlrpc,sockets-text", "--socket-buffer", "65536",
                   "--tcp-nodelay", "--campaigns", "VV:50000"])
    assert a.campaigns == [("VV", 50000)]
    assert ipc.socket_options("sockets", a) == " --buffer 65536 --tcp-nodelay"
    assert ipc.socket_options("sockets-text", a) == " --buffer 65536 --tcp-nodelay"
    assert ipc.socket_options("xmlrpc", a) == ""
    plain = ipc.parse([])
    assert ipc.socket_options("sockets", plain) == ""


@pytest.mark.parametrize("argv, words", [
    (["--primitives", "xmlrpc", "--tcp-nodelay"], "apply to the socket primitives"),
    (["--socket-buffer", "-1"], "--socket-buffer must be"),
    (["--campaigns", "VV:5,VV:5"], "given twice"),
    (["--campaigns", "VV:abc"], "bad size(V)"),
    (["--primitives", "corba"], "unknown primitive(s) corba"),
    (["--trials", "1"], "at least 2"),
    (["--boundary-calls", "0"], "must be positive"),
])
def test_bad_options_are_one_error(argv, words):
    with pytest.raises(JvmosError) as e:
        ipc.parse(argv)
    assert words in str(e.value)


def test_boundary_none_and_quick():
    a = ipc.parse(["--quick", "--boundary", "none"])
    # --quick: every benchmark at size(V) = 5 (the headline's groups), 2 trials
    assert a.boundary == [] and a.trials == 2 and a.campaigns == [(b, 5) for b in ipc.BENCHMARKS]
    assert ipc.parse(["--quick"]).boundary == [("VV", 5)]
