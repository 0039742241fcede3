"""The print() list probegen writes into common.bt's stop block: every map bpftrace would
print at its end, and none of the scratch maps END clears (a print of a map that does not
exist would not compile)."""
from jvmos.probegen import PRINT_MAPS, _print_maps, output_maps


def test_output_maps_skip_comments_strings_and_the_scratch_maps():
    code = ['/* @ghost is only named here */',
            'tracepoint:x /@traced[pid]/ { @calls[pid, "io", probe] = count(); @t0[tid] = nsecs; }',
            'uprobe:y { printf("@notamap %d\\n", 1); @bytes[pid] = sum(arg2); } // @alsonot']
    end = ['clear(@t0); /* clear(@calls) */']
    assert output_maps(code, end) == ["@bytes", "@calls"]


def test_print_list_replaces_the_marker_line_with_its_indentation():
    out = ["{", "\t@stop_ns = nsecs;", "\t" + PRINT_MAPS, '\tprintf("x\\n");', "}",
           "k { @a[1] = count(); }"]
    assert _print_maps(out, out, []) == ["{", "\t@stop_ns = nsecs;", "\tprint(@a);",
                                         "\tprint(@stop_ns);", '\tprintf("x\\n");', "}",
                                         "k { @a[1] = count(); }"]


def test_a_marker_without_the_print_list_is_refused():
    import pytest
    from jvmos import JvmosError
    out = ["{", '\tprintf("jvmos-maps-printed\\n");', "}", "k { @a[1] = count(); }"]
    with pytest.raises(JvmosError, match="end marker but no map"):
        _print_maps(out, out, [])


def test_the_real_scripts_print_every_map_the_analyzers_read():
    # every layer, both modes, both scopes: the maps the analyzers key (rawparse.MAP_ARITY)
    # that the rendered code assigns are all in the stop block's print list
    import re
    from pathlib import Path
    from jvmos.analyzers.rawparse import MAP_ARITY
    from jvmos.catalogue import LAYERS
    from jvmos.probegen import render
    libs = {"LIBJVM": [], "LIBNIO": [], "LIBC": []}
    for mode in ("time", "count"):
        for scope in ("host", "process"):
            s = render(list(LAYERS), libs, lambda p: {}, mode=mode, scope=scope)
            stop = s.text[s.text.index("signal_generate"):]
            stop = stop[:stop.index("jvmos-maps-printed")]
            printed = set(re.findall(r"print\((@\w+)\)", stop))
            assigned = set(re.findall(r"(@\w+)\[[^\]]*\]\s*=|(@\w+)\s*=", s.text))
            assigned = {a or b for a, b in assigned}
            for m in MAP_ARITY:
                if m in assigned:
                    assert m in printed, (mode, scope, m)
