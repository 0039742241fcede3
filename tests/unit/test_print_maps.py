"""The print() list probegen writes into common.bt's stop block: every map bpftrace would
print at its end, and none of the scratch maps END clears (a print of a map that does not
exist would not compile)."""
from jvmos.probegen import PRINT_MAPS, _print_maps, output_maps


def test_output_maps_skip_comments_strings_and_the_scratch_maps():
    code = ['/* @ghost is only named here */',
            'tracepoint:x /@trk[pid]/ { @calls[pid, "io", probe] = count(); @t0[tid] = nsecs; }',
            'uprobe:y { printf("@notamap %d\\n", 1); @bytes[pid] = sum(arg2); } // @alsonot']
    end = ['clear(@t0); /* clear(@calls) */']
    assert output_maps(code, end) == ["@bytes", "@calls"]


def test_print_list_replaces_the_marker_line_with_its_indentation():
    out = ["{", "\t@stop_ns = nsecs;", "\t" + PRINT_MAPS, '\tprintf("x\\n");', "}",
           "k { @a[1] = count(); }"]
    assert _print_maps(out, out, []) == ["{", "\t@stop_ns = nsecs;", "\tprint(@a);",
                                         "\tprint(@stop_ns);", '\tprintf("x\\n");', "}",
                                         "k { @a[1] = count(); }"]
