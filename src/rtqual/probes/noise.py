"""The noise probe's Python side: `--hw` (rtqual's own key, rtqual.probes.catalog.HW), the kernel's osnoise tracer
in its hwnoise mode after the loop (rtqual.measure.host.osnoise). Its options are the C table's, like every probe's."""

HW_NOISE = True
