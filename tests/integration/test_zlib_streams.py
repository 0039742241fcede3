"""The zlib streams a JVM creates (the mem layer's uprobes on zlib's inflateInit*/deflateInit*):
`jvmos record --pid` of a live JVM that, once counting has started, makes 2,000
java.util.zip.Inflaters (each inflating one small zlib buffer, then ended) and 300 Deflaters
(each deflating one, then ended). Every Inflater and Deflater creates one native zlib stream,
so the recording counts exactly 2,000 inflate and 300 deflate streams. Everything the loop
needs (its classes, the compressed buffer) was made before the recording began, so the JVM
creates no other stream while counting runs. Run on every JDK found: OpenJDK 17 (Debian)
calls the system's libz.so.1, Temurin 25 its own zlib inside libzip.so."""
import subprocess
from pathlib import Path

import pytest

from conftest import can_trace, record_between_markers
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

INFLATERS, DEFLATERS = 2000, 300

STREAMS = """
import java.nio.file.*;
import java.util.zip.*;

public class Streams {
    static byte[] plain = new byte[1024];

    static int inflateOnce(byte[] packed, int len) throws Exception {
        Inflater inf = new Inflater();          // one zlib inflate stream
        inf.setInput(packed, 0, len);
        int n = inf.inflate(new byte[plain.length]);
        inf.end();
        return n;
    }

    static int deflateOnce() {
        Deflater def = new Deflater();          // one zlib deflate stream
        def.setInput(plain);
        def.finish();
        int n = def.deflate(new byte[2048]);
        def.end();
        return n;
    }

    public static void main(String[] a) throws Exception {
        Path dir = Paths.get(a[0]);
        int inflaters = Integer.parseInt(a[1]), deflaters = Integer.parseInt(a[2]);
        for (int i = 0; i < plain.length; i++) plain[i] = (byte) (i % 7);
        byte[] packed = new byte[2048];
        Deflater d = new Deflater();            // the buffer, before counting starts
        d.setInput(plain);
        d.finish();
        int len = d.deflate(packed);
        d.end();
        long sum = inflateOnce(packed, len) + deflateOnce();    // classes loaded now
        Files.write(dir.resolve("ready"), new byte[0]);
        while (!Files.exists(dir.resolve("go"))) Thread.sleep(20);
        for (int i = 0; i < inflaters; i++) sum += inflateOnce(packed, len);
        for (int i = 0; i < deflaters; i++) sum += deflateOnce();
        Files.write(dir.resolve("done"), Long.toString(sum).getBytes());
        Thread.sleep(600_000);
    }
}
"""


def record_streams(tmp_path: Path, java: Path) -> tuple:
    """(summary, manifest) of a recording of the Streams program's loop."""
    src = tmp_path / "Streams.java"
    src.write_text(STREAMS)
    jvm = subprocess.Popen([str(java), str(src), str(tmp_path), str(INFLATERS), str(DEFLATERS)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return record_between_markers(tmp_path, jvm, ["--layers", "mem", "--mode", "count"])


@pytest.mark.parametrize("jvm", discover_jdks(), ids=lambda j: j.home.name)
def test_every_inflater_and_deflater_is_one_zlib_stream(platform_file, tmp_path, jvm):
    s, m = record_streams(tmp_path, jvm.home / "bin" / "java")
    zlib = m["probes"]["zlib"]
    assert zlib["unknown"] is None and zlib["libraries"], zlib
    z = s["by_pid"][str(m["attach_pid"])]["categories"]["malloc"]["zlib_streams"]
    print(f"{jvm.home.name}: {zlib['libraries']}: {z}")
    assert z["inflate"] == INFLATERS and z["deflate"] == DEFLATERS
    assert z["calls"] == INFLATERS + DEFLATERS
    # the JDK's libzip calls the *Init2_ functions only
    assert z["functions"] == {"inflateInit2_": INFLATERS, "deflateInit2_": DEFLATERS}
    total = s["categories"]["malloc"]["zlib_streams"]
    assert (total["inflate"], total["deflate"]) == (INFLATERS, DEFLATERS)
    # each stream's init was one hit of a count-only uprobe
    assert s["totals"]["probe_hits"]["mem:zlib_init"] == INFLATERS + DEFLATERS
