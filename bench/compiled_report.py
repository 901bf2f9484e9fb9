"""The markdown report of the compiled CPU suite, from run_compiled.py's results (standard library only).

Bytes counted for memory-bound rows (MEMORY_BOUND), as torch_baseline.py counts them: one read and one
write of the big tensor (reductions: one read, although it is read twice; rmsnorm_bf16: 2-byte
elements). A row's percent of copy bandwidth is bytes / median compiled time / the copy bandwidth of
that allocator column (the median over its kiln processes of a parallel memcpy of 512 MiB, read +
write counted)."""
import math
import statistics

# workload: (passes over the first input, bytes per element)
MEMORY_BOUND = {"pointwise_chain": (2, 4), "softmax": (2, 4), "layernorm": (2, 4), "rmsnorm_bf16": (2, 2),
                "reductions": (1, 4)}
SPREAD_LIMIT = 1.15  # issue 10: the spread of per-process medians must stay at or below this


def ms(v):
    v *= 1e3
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def seconds(v):
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def stats(values):
    return min(values), statistics.median(values), max(values)


def triple(values, fmt):
    lo, mid, hi = stats(values)
    return f"{fmt(lo)} / **{fmt(mid)}** / {fmt(hi)}"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def measured_units(results):
    """(unit as displayed, the unit whose processes measured it) for every unit, in run order."""
    return [(u, u["measured_as"] or u["name"]) for u in results["units"]]


def per_process(results, unit, allocator, side, key):
    return [r[key] for r in results["processes"]
            if r["unit"] == unit and r["allocator"] == allocator and r["side"] == side and r.get(key) is not None]


def copy_bandwidth(results, allocator, side):
    values = [r["copy_GBps"] for r in results["processes"] if r["allocator"] == allocator and r["side"] == side]
    return stats(values) if values else None


def calls_range(results):
    """'N-M calls' over every process's timed eager and compiled measurements."""
    counts = [len(r[key]) for r in results["processes"] for key in ("eager_times_s", "compiled_times_s") if r.get(key)]
    return f"{min(counts)}-{max(counts)} calls" if counts else "no calls"


def header(results):
    m = results["meta"]
    threads = {side: ", ".join(str(t) for t in sorted({r["threads"] for r in results["processes"]
                                                       if r["side"] == side})) or "-" for side in ("kiln", "torch")}
    lines = [f"# Compiled CPU suite: kiln vs PyTorch {m.get('torch', '?')}",
             "",
             f"- CPU: {m['cpu']} ({m['cores']} logical CPUs), host {m['host']}; {m['date']}; kiln {m['kiln']}.",
             f"- Threads: OMP_NUM_THREADS={m['threads']} for both; used: kiln {threads['kiln']} "
             f"(omp_get_max_threads), PyTorch {threads['torch']} (torch.get_num_threads).",
             f"- {m['processes']} processes per side and allocator, kiln and PyTorch alternately first, each "
             "measuring every workload and scale in turn; each process reports, per workload, the median of "
             + (f"at least {m['reps']} calls, and more until they add up to {m['min_ms']:g} ms or number "
                f"{m.get('max_calls', 2000)} ({calls_range(results)})" if m.get("min_ms") else f"{m['reps']} calls")
             + f" after {m['warmup']} warm-up calls"
             + (f", which follow a {m['settle_ms']} ms pause after the workload's compiles. " if m.get("settle_ms")
                else ". ") +
             "Cells: min / **median** / max of the per-process medians, in ms. Ratios are of medians.",
             f"- Command: `{m['command']}` ({m.get('wall_s', 0) / 60:.0f} min). Load average (1 min) at start "
             f"{m['load_average_at_start']:.1f}, at end {m.get('load_average_at_end', float('nan')):.1f}, on "
             f"{m['cores']} CPUs (at start the benchmark runs nothing: what is there is other work).",
             "- Every result (kiln compiled, kiln eager, torch.compile, torch eager) was compared with the "
             "expected outputs in every process before its time was taken (table at the end).",
             "",
             "Copy bandwidth, GB/s (read + write of 512 MiB; min / median / max over processes):",
             "",
             "| allocator | kiln process: parallel memcpy | PyTorch process: copy_ |",
             "|---|---|---|"]
    for allocator in m["allocators"]:
        cells = []
        for side in ("kiln", "torch"):
            s = copy_bandwidth(results, allocator, side)
            cells.append(f"{s[0]:.1f} / **{s[1]:.1f}** / {s[2]:.1f}" if s else "-")
        lines.append(f"| {allocator} | {cells[0]} | {cells[1]} |")
    lines += ["", "Allocator policies (the same environment for both sides' processes): "
              + "; ".join(f"**{a}**: `{m['allocator_env'][a]}`" for a in m["allocators"]) + ". A memory-bound "
              "row's percent of copy bandwidth (both columns) is of the kiln process's memcpy figure."]
    return lines


def unit_note(unit):
    note = "full shapes" if unit["scale"] == 1 else f"scale {unit['scale']}"
    shapes = ", ".join(f"{i['dtype']}{i['sizes']}" for i in unit["prepared"]["inputs"][:1])
    return note, shapes


def timing_table(results, scale, allocator):
    m = results["meta"]
    bw = copy_bandwidth(results, allocator, "kiln")
    title = "full shapes" if scale == 1 else f"shapes 1/{scale}"
    lines = [f"### {title}, allocator {allocator} (`{m['allocator_env'][allocator]}`)", "",
             "| workload | first input | torch eager ms | torch.compile ms | kiln eager ms | kiln compiled ms | "
             "torch.compile / kiln compiled | kiln eager / torch eager | % of copy BW: kiln compiled, torch.compile | "
             "spread (max/min): kiln compiled, torch.compile |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    ratios, eager_ratios, wide, notes = [], [], [], []
    for unit, measured in measured_units(results):
        if unit["scale"] != scale:
            continue
        name = unit["workload"]
        shapes = unit_note(unit)[1]
        if unit["failed"]:
            lines.append(f"| {name} | {shapes} | check failed: not timed | | | | | | | |")
            continue
        cols = {(side, key): per_process(results, measured, allocator, side, key)
                for side in ("kiln", "torch") for key in ("eager_s", "compiled_s")}
        if not all(cols.values()):
            continue
        mark = ""
        if unit["measured_as"]:
            mark = " †"
            notes.append(f"† {name}: the same inputs as {unit['measured_as']}; the same processes.")
        med = {k: statistics.median(v) for k, v in cols.items()}
        ratio = med["torch", "compiled_s"] / med["kiln", "compiled_s"]
        eager_ratio = med["kiln", "eager_s"] / med["torch", "eager_s"]
        ratios.append(ratio)
        eager_ratios.append(eager_ratio)
        fraction = "-"
        if name in MEMORY_BOUND and bw:
            passes, size = MEMORY_BOUND[name]
            numel = math.prod(unit["prepared"]["inputs"][0]["sizes"])
            nbytes = passes * numel * size
            fraction = ", ".join(f"{100 * nbytes / med[side, 'compiled_s'] / 1e9 / bw[1]:.0f}%"
                                 for side in ("kiln", "torch"))
        spreads = [max(cols[side, "compiled_s"]) / min(cols[side, "compiled_s"]) for side in ("kiln", "torch")]
        if max(spreads) > SPREAD_LIMIT:
            wide.append(name)
        lines.append(
            f"| {name}{mark} | {shapes} | {triple(cols['torch', 'eager_s'], ms)} | "
            f"{triple(cols['torch', 'compiled_s'], ms)} | {triple(cols['kiln', 'eager_s'], ms)} | "
            f"{triple(cols['kiln', 'compiled_s'], ms)} | **{ratio:.2f}** | {eager_ratio:.2f} | {fraction} | "
            f"{spreads[0]:.2f}, {spreads[1]:.2f} |")
    lines += [""] + notes + ([""] if notes else [])
    lines.append(f"Geometric mean of torch.compile / kiln compiled over {len(ratios)} rows: **{geomean(ratios):.2f}** "
                 f"(above 1: kiln faster); rows below 0.9: {sum(r < 0.9 for r in ratios)}. Geometric mean of kiln "
                 f"eager / torch eager: {geomean(eager_ratios):.2f} (below 1: kiln faster; issue 10 asks at most "
                 f"1.10 on every row). Compiled spread above {SPREAD_LIMIT}: {', '.join(wide) or 'none'}.")
    if m["processes"] < 2:
        lines.append("(One process per side: the spread says nothing.)")
    return lines + [""]


def first_compiles(results):
    """The first compile of each process (its first workload's, with the one-time start-up), per side."""
    lines = ["### First compile in a process", "",
             "Wall time of the first call of the first workload in each timing process (compile and one run, "
             "nothing subtracted; an empty cache), seconds, min / **median** / max over processes: kiln includes "
             "its toolchain probe, PyTorch the import and start-up of Dynamo and Inductor (`import torch` itself "
             "is not counted).", "", "| side | workload | first compile in process, s |", "|---|---|---|"]
    for side in ("kiln", "torch"):
        rows = [r for r in results["processes"] if r["side"] == side and r.get("first_compile_s") is not None
                and r.get("allocator")]
        if rows:
            units = ", ".join(sorted({r["unit"] for r in rows}))
            name = "kiln::compile" if side == "kiln" else "torch.compile"
            lines.append(f"| {name} | {units} | {triple([r['first_compile_s'] for r in rows], seconds)} |")
    return lines + [""]


def compile_table(results, scale):
    lines = [f"### Later compiles, {'full shapes' if scale == 1 else f'scale {scale}'} (all allocators' processes)",
             "",
             "Wall time of the first call (compile and one run; nothing subtracted), seconds, min / **median** / "
             "max over processes. *Later cold*: a compile in a process that has compiled before, with a new empty "
             "cache (kiln: a new KILN_CACHE_DIR; PyTorch: torch._dynamo.reset() and a fresh Inductor cache, which "
             "also clears Inductor's in-memory caches). *Warm start*: a new kiln::compile object whose code is in "
             "kiln's cache.",
             "",
             "| workload | kiln later cold | torch.compile later cold | cold ratio | kiln warm start ms |",
             "|---|---|---|---|---|"]
    for unit, measured in measured_units(results):
        if unit["scale"] != scale or unit["failed"]:
            continue
        values = {(side, key): [v for a in results["meta"]["allocators"]
                                for v in per_process(results, measured, a, side, key)]
                  for side, key in (("kiln", "cold_compile_s"), ("torch", "cold_compile_s"), ("kiln", "warm_start_s"))}
        if not all(values.values()):
            continue
        ratio = statistics.median(values["torch", "cold_compile_s"]) / statistics.median(values["kiln", "cold_compile_s"])
        mark = " †" if unit["measured_as"] else ""
        lines.append(f"| {unit['workload']}{mark} | {triple(values['kiln', 'cold_compile_s'], seconds)} | "
                     f"{triple(values['torch', 'cold_compile_s'], seconds)} | {ratio:.1f} | "
                     f"{triple(values['kiln', 'warm_start_s'], ms)} |")
    return lines + [""]


def check_table(results):
    lines = ["## Checks", "",
             "Every result is compared with expected outputs written by PyTorch (bench/torch_suite.py says how), "
             "in every process, before its time is taken. `torch_eager`: PyTorch eager's outputs, within "
             "torch.testing.assert_close's default tolerance for the dtype (|got - expected| <= atol + rtol "
             "|expected|; float32 1e-5, 1.3e-6; bfloat16 1e-5, 1.6e-2). `float64_reference` (rows that sum long "
             "runs of terms, where summation order moves float32 results past that tolerance): the workload in "
             "float64; a result must be within twice PyTorch's own float32 error (the larger of eager's and "
             "torch.compile's) both as largest absolute error (+ 1e-5) and as RMSE (+ 1e-6). Cells: the largest "
             "absolute error over all processes and outputs, and the largest RMSE.",
             "",
             "| workload | expected | tolerance per output | kiln compiled | kiln eager | torch.compile | torch eager |",
             "|---|---|---|---|---|---|---|"]
    for unit in results["units"]:
        if unit["measured_as"]:
            continue
        outputs = unit["prepared"]["outputs"]
        tolerance = "; ".join(f"atol {o['atol']:.2g}" + (f" rtol {o['rtol']:.2g}" if o["rtol"] else "")
                              + (f" RMSE {o['max_rmse']:.2g}" if o["max_rmse"] >= 0 else "") for o in outputs)
        rows = unit.get("checks", []) + [r for r in results["processes"] if r["unit"] == unit["name"]]
        worst, rmse, failed = {}, {}, set()
        for row in rows:
            for c in row["checks"]:
                kind = c["result"].split(" (")[0]
                worst[kind] = max(worst.get(kind, 0.0), c["max_abs_err"])
                rmse[kind] = max(rmse.get(kind, 0.0), c["rmse"])
                if not c.get("ok", True):
                    failed.add(kind)
        cells = [("**FAILED** " if k in failed else "") + (f"{worst[k]:.2g}, {rmse[k]:.2g}" if k in worst else
                                                            "not reached")
                 for k in ("kiln compiled", "kiln eager", "torch.compile", "torch eager")]
        lines.append(f"| {unit['name']} | {outputs[0]['basis']} | {tolerance} | " + " | ".join(cells) + " |")
    if results["failures"]:
        lines += ["", "**Failed checks (these workloads were not timed; the run exited non-zero):**", ""]
        lines += ["```"] + [f for f in results["failures"]] + ["```"]
    return lines + [""]


GUEST_WAIT_MS = 1.0
WRITEBACK_KIB = 1024


def slow_kind(steal_ms, written_kib, max_queued_ms):
    """What a slow call's counters point at, the first of: 'guest' (one of kiln's threads waited
    GUEST_WAIT_MS or more for a CPU: other work in the machine), 'writeback' (WRITEBACK_KIB or more
    written back meanwhile), 'steal' (the hypervisor reported taking a vCPU; /proc/stat counts it in
    10 ms ticks), or 'none' (no counter moved). Involuntary context switches are not used: a third of
    all calls, slow or not, have some."""
    if (max_queued_ms or 0) >= GUEST_WAIT_MS:
        return "guest"
    if (written_kib or 0) >= WRITEBACK_KIB:
        return "writeback"
    if (steal_ms or 0) > 0:
        return "steal"
    return "none"


def slow_calls(results):
    """kiln's timed calls slower than twice their workload's median (of the processes' medians),
    against what the system took from the process meanwhile (issue 10's slow mode): its threads' involuntary
    context switches, the machine's steal time, the KiB it wrote back to storage, and the most one of
    kiln's threads waited for a CPU (the last two where the JSON has them)."""
    rows = [r for r in results["processes"] if r["side"] == "kiln" and r.get("eager_preempted") is not None]
    if not rows:
        return []
    slow, fast = [], []
    for mode in ("eager", "compiled"):
        for unit in {(r["unit"], r["allocator"]) for r in rows}:
            processes = [r for r in rows if (r["unit"], r["allocator"]) == unit]
            calls = [(r, i, t) for r in processes for i, t in enumerate(r[f"{mode}_times_s"])]
            # The median of the processes' medians: with --min-ms a faster process times more calls,
            # and a median of all calls would lean to it.
            middle = statistics.median(statistics.median(r[f"{mode}_times_s"]) for r in processes)
            for r, i, t in calls:
                extra = [r[key][i] if r.get(key) else None
                         for key in (f"{mode}_written_kib", f"{mode}_max_queued_ms")]
                entry = (mode, r, i, t, middle, r[f"{mode}_preempted"][i], r[f"{mode}_steal_ms"][i], *extra)
                (slow if t > 2 * middle else fast).append(entry)

    def with_steal(entries):
        counted = [e for e in entries if e[6] is not None]
        return f"{sum(1 for e in counted if e[6] > 0)} of {len(counted)}"

    def mean(values):
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else float("nan")

    lines = ["## Slow calls (kiln)", "",
             f"Timed calls slower than twice their workload's median (the median of its processes' medians): {len(slow)} of "
             f"{len(slow) + len(fast)}. Per call, mean involuntary context switches of kiln's threads: "
             f"slow {mean([e[5] for e in slow]):.2f}, others {mean([e[5] for e in fast]):.2f}; mean steal time "
             f"of the machine, ms summed over its CPUs: slow {mean([e[6] for e in slow]):.2f}, others "
             f"{mean([e[6] for e in fast]):.2f} (per ms of call: slow "
             f"{mean([e[6] / (e[3] * 1e3) for e in slow if e[6] is not None]):.2f}, others "
             f"{mean([e[6] / (e[3] * 1e3) for e in fast if e[6] is not None]):.2f}). Calls with any steal "
             f"(counted in 10 ms ticks, so a call that lost a few ms shows one about as often as not): slow "
             f"{with_steal(slow)}, others {with_steal(fast)}.", ""]
    counted = [e for e in slow if e[8] is not None]
    if counted:
        kinds = [slow_kind(*e[6:]) for e in counted]
        lines += [f"Of the {len(counted)} slow calls with the newer counters, taken in this order: "
                  f"{kinds.count('guest')} with one of kiln's threads waiting {GUEST_WAIT_MS:g} ms or more for a "
                  f"CPU (other work in the machine), {kinds.count('writeback')} with "
                  f"{WRITEBACK_KIB // 1024} MiB or more written back meanwhile, {kinds.count('steal')} with steal "
                  f"time, and {kinds.count('none')} where none of these counters moved (bench/README.md, "
                  "\"The slow mode looked for at its source\").", ""]
    if slow:
        def num(v, digits):
            return "-" if v is None else f"{v:.{digits}f}"

        lines += ["| workload | allocator | process | kiln | call | ms | median ms | preempted | steal ms "
                  "| written KiB | most one thread waited for a CPU, ms |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for mode, r, i, t, middle, pre, steal, written, queued in sorted(
                slow, key=lambda e: (e[1]["unit"], e[1]["allocator"], e[1]["process"], e[0], e[2]))[:60]:
            lines.append(f"| {r['unit']} | {r['allocator']} | {r['process']} | {mode} | {i + 1} | {ms(t)} | "
                         f"{ms(middle)} | {pre:.0f} | {num(steal, 1)} | {num(written, 0)} | {num(queued, 2)} |")
        if len(slow) > 60:
            lines.append(f"| ({len(slow) - 60} more in the JSON) | | | | | | | | | | |")
    return lines + [""]


def write_report(results):
    lines = header(results) + [""]
    for scale in results["meta"]["scales"]:
        lines += [f"## {'Full shapes' if scale == 1 else f'Shapes 1/{scale}'}", ""]
        for allocator in results["meta"]["allocators"]:
            lines += timing_table(results, scale, allocator)
        lines += compile_table(results, scale)
    lines += first_compiles(results) + slow_calls(results) + check_table(results)
    return "\n".join(lines)
