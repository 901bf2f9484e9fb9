#!/usr/bin/env python3
"""The compiled CPU suite (`make bench`): kiln eager and kiln compiled (build/bench/kiln_compiled_bench)
against PyTorch eager and torch.compile (bench/torch_suite.py), on the workloads of
shared/reference/torch_baseline.py, in separate processes, on the same inputs.

1. Prepare and check: for each scale and workload, PyTorch writes the seeded inputs and the expected
   outputs with their tolerances (torch_suite.py prepare); then one kiln process and one PyTorch
   process compile every workload and compare every result (kiln compiled, kiln eager, torch.compile,
   torch eager) with them. A result outside its tolerance fails the run here, before anything is timed
   (--keep-going: time the other workloads, and still exit non-zero). A workload whose inputs are the
   same at two scales is prepared at both and measured once.
2. Time: for each allocator policy, processes p = 1..P: a kiln process and a PyTorch process,
   alternately first, each measuring every workload in turn (one process per side and round, so
   Inductor's one-time start-up is paid once per process, as a user pays it). Each process checks
   its results again before timing, measures its first compile (the first workload's: the start-up),
   then per workload a later cold compile and the medians of REPS eager and compiled calls, and last
   the copy bandwidth; all cores (OMP_NUM_THREADS) on both sides.
3. Report: a markdown table per scale and allocator (min / median / max of the per-process medians,
   ratios of medians) and the compile times, in --out; every per-process number in the JSON beside it.

Only the standard library here: the PyTorch side runs under --python (any PyTorch 2.x with NumPy)."""
import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import cpu_model  # noqa: E402
from compiled_report import write_report  # noqa: E402

MAX_CALLS = 2000  # where --min-ms stops adding timed calls (kiln_compiled_bench's kMaxCalls, torch_suite's MAX_CALLS)
WORKLOADS = ["pointwise_chain", "softmax", "layernorm", "rmsnorm_bf16", "reductions", "gelu_mlp", "attention_naive",
             "gpt2_block_fwd"]
# The environment each allocator policy adds to both sides' processes.
ALLOCATORS = {
    "glibc": {},
    "no-mmap": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"},
    "jemalloc": None,  # LD_PRELOAD of libjemalloc, where installed (found at start-up)
}
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def find_jemalloc():
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
        path = os.path.join(d, "libjemalloc.so.2")
        if os.path.exists(path):
            return path
    return None


def allocator_description(name):
    if name == "jemalloc":
        return f"LD_PRELOAD={find_jemalloc()}"
    return " ".join(f"{k}={v}" for k, v in ALLOCATORS[name].items()) or "glibc defaults"


class ProcessFailed(Exception):
    def __init__(self, message, rows=None):
        super().__init__(message)
        self.rows = rows or []  # what the process reported before it failed (the last row: the failed workload)


class Runner:
    def __init__(self, args, work):
        self.args = args
        self.work = work  # each process gets a TMPDIR under it, removed when the process ends
        self.kiln_binary = os.path.join(args.build, "bench", "kiln_compiled_bench")
        self.suite = os.path.join(HERE, "torch_suite.py")

    def env(self, allocator):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        env["OMP_NUM_THREADS"] = str(self.args.threads)
        if allocator == "jemalloc":
            env["LD_PRELOAD"] = find_jemalloc()
        else:
            env.update(ALLOCATORS[allocator])
        return env

    def run(self, what, command, allocator):
        """Runs one process; returns its JSON lines (one per workload measured) as dicts, or raises
        ProcessFailed with its stderr and the rows it reported (the last one the failed workload's)."""
        env = self.env(allocator)
        env["TMPDIR"] = tempfile.mkdtemp(prefix="tmp-", dir=self.work)  # the caches of both sides go there
        start = time.perf_counter()
        try:
            p = subprocess.run(command, env=env, capture_output=True, text=True)
        finally:
            shutil.rmtree(env["TMPDIR"], ignore_errors=True)
        wall = time.perf_counter() - start
        rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        for row in rows:
            row["process_wall_s"] = wall
        if p.returncode != 0 or not rows:
            kind = "a result is outside its tolerance" if p.returncode == 3 else f"exit status {p.returncode}"
            raise ProcessFailed(f"{what} failed ({kind}).\n  command: {shlex.join(command)}\n"
                                + "\n".join("  | " + line for line in p.stderr.strip().splitlines()[-15:]), rows)
        return rows

    def prepare(self, units):
        """Prepares every unit in one PyTorch process; returns what it wrote of each, in order."""
        command = [self.args.python, self.suite, "prepare"]
        for u in units:
            command += ["--workload", u["workload"], "--scale", str(u["scale"]), "--dir", u["dir"]]
        rows = self.run("PyTorch prepare", command, "glibc")
        if len(rows) != len(units):
            raise ProcessFailed(f"PyTorch prepare reported {len(rows)} workloads of {len(units)}")
        return rows

    def kiln(self, dirs, allocator, check_only=False):
        command = [self.kiln_binary, "--reps", str(self.args.reps), "--min-ms", str(self.args.min_ms), "--warmup",
                   str(self.args.warmup), "--settle-ms", str(self.args.settle_ms)]
        command += [arg for d in dirs for arg in ("--dir", d)] + (["--check-only"] if check_only else [])
        return self.run(f"kiln process ({allocator})", command, allocator)

    def torch(self, dirs, allocator, check_only=False):
        command = [self.args.python, self.suite, "time", "--reps", str(self.args.reps), "--min-ms",
                   str(self.args.min_ms), "--warmup", str(self.args.warmup), "--settle-ms", str(self.args.settle_ms)]
        command += [arg for d in dirs for arg in ("--dir", d)] + (["--check-only"] if check_only else [])
        return self.run(f"PyTorch process ({allocator})", command, allocator)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    venv = os.path.join(REPO, ".venv", "bin", "python")
    p.add_argument("--python", default=venv if os.path.exists(venv) else "python3",
                   help="a python with PyTorch 2.x and NumPy (default: the repo's .venv, else python3)")
    p.add_argument("--build", default="build", help="kiln's CMake build directory (holds bench/kiln_compiled_bench)")
    p.add_argument("--processes", type=int, default=3, help="processes per side, workload, scale and allocator")
    p.add_argument("--reps", type=int, default=10, help="at least this many timed calls per process (after --warmup calls)")
    p.add_argument("--min-ms", type=float, default=200,
                   help=f"both sides: timed calls go on past --reps while they add up to less (at most {MAX_CALLS} calls), "
                        "so that a short row's median is not of a few ms, which one of the host's slow windows "
                        "covers (bench/README.md)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--settle-ms", type=int, default=0,
                   help="both sides: a pause after each workload's compiles, before its warm-up calls (the host's "
                        "slow windows follow compiles: bench/README.md)")
    p.add_argument("--scales", default="1,8",
                   help="comma-separated: the baseline CPU shapes' first dimension is divided by each (1: full)")
    p.add_argument("--allocators", default="glibc,no-mmap",
                   help=f"comma-separated, of {', '.join(ALLOCATORS)} (jemalloc where libjemalloc.so.2 is installed)")
    p.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="OMP_NUM_THREADS for both sides")
    p.add_argument("--out", default="bench/results/compiled_cpu.md", help="the markdown table; the JSON goes beside it")
    p.add_argument("--work-dir", default=None, help="where inputs and expected outputs go (default: a new temp dir)")
    p.add_argument("--check-only", action="store_true", help="prepare and check every workload; time nothing")
    p.add_argument("--report-from", metavar="JSON",
                   help="only write --out's table from a run's JSON (or the .json.partial of a run cut short)")
    p.add_argument("--skip-check-phase", action="store_true",
                   help="go straight to timing (each timing process still checks every result before timing it, "
                        "and the run fails on the first mismatch): saves two processes' start-up on a slow host")
    p.add_argument("--keep-going", action="store_true",
                   help="when a check fails, time the workloads that passed (the run still exits non-zero)")
    a = p.parse_args()
    a.scales = [int(s) for s in a.scales.split(",") if s]
    a.allocators = [s for s in a.allocators.split(",") if s]
    a.only = [s for s in a.only.split(",") if s]
    for name in a.only:
        if name not in WORKLOADS:
            p.error(f"unknown workload {name} (known: {', '.join(WORKLOADS)})")
    for name in a.allocators:
        if name not in ALLOCATORS:
            p.error(f"unknown allocator {name} (known: {', '.join(ALLOCATORS)})")
        if name == "jemalloc" and not find_jemalloc():
            p.error("--allocators jemalloc: no libjemalloc.so.2 found (Debian/Ubuntu: apt install libjemalloc2)")
    if not a.report_from and not os.access(os.path.join(a.build, "bench", "kiln_compiled_bench"), os.X_OK):
        p.error(f"no {a.build}/bench/kiln_compiled_bench: build it (cmake --build {a.build} --target "
                "kiln_compiled_bench; bench/ is built when Google Benchmark is installed)")
    if a.processes < 1 or a.reps < 1:
        p.error("--processes and --reps must be at least 1")
    if a.settle_ms < 0 or a.min_ms < 0:
        p.error("--settle-ms and --min-ms must be at least 0")
    return a


def git_commit():
    if os.environ.get("KILN_COMMIT"):  # a copy of the tree without .git (another host)
        return os.environ["KILN_COMMIT"]
    try:
        return subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    a = parse_args()
    if a.report_from:
        with open(a.report_from) as f:
            results = json.load(f)
        text = write_report(results)
        with open(a.out, "w") as f:
            f.write(text)
        print(text)
        return
    work = os.path.abspath(a.work_dir or tempfile.mkdtemp(prefix="kiln-bench-"))
    os.makedirs(work, exist_ok=True)
    runner = Runner(a, work)
    workloads = [w for w in WORKLOADS if not a.only or w in a.only]
    results = {
        "meta": {"cpu": cpu_model(), "host": platform.node(), "cores": os.cpu_count(), "threads": a.threads,
                 "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "kiln": git_commit(),
                 "load_average_at_start": os.getloadavg()[0], "python": a.python, "command": shlex.join(sys.argv), "processes": a.processes, "reps": a.reps,
                 "min_ms": a.min_ms, "max_calls": MAX_CALLS, "warmup": a.warmup, "settle_ms": a.settle_ms, "scales": a.scales, "allocators": a.allocators,
                 "allocator_env": {k: allocator_description(k) for k in a.allocators}},
        "units": [], "failures": [], "processes": []}
    started = time.perf_counter()
    try:
        units = prepare_and_check(a, runner, work, workloads, results)
        if a.check_only:
            log(f"checked {len(units)} workloads at scales {a.scales}: {len(results['failures'])} failed")
            sys.exit(1 if results["failures"] else 0)
        timed = [u for u in units if u["measured_as"] is None and not u["failed"]]
        by_key = {(u["workload"], u["scale"]): u for u in timed}
        total = len(a.allocators) * a.processes * 2
        done = 0
        for p in range(a.processes):  # rounds: a run cut short still has every allocator column
            for allocator in a.allocators:
                sides = ["kiln", "torch"] if p % 2 == 0 else ["torch", "kiln"]
                for position, side in enumerate(sides):
                    done += 1
                    where = dict(allocator=allocator, process=p + 1, position=position + 1)
                    try:
                        rows = getattr(runner, side)([u["dir"] for u in timed], allocator)
                    except ProcessFailed as e:
                        for row in e.rows:
                            row.update(where, unit=by_key[row["workload"], row["scale"]]["name"])
                        raise
                    for row in rows:
                        row.update(where, unit=by_key[row["workload"], row["scale"]]["name"])
                        results["processes"].append(row)
                    log(f"[{done}/{total}] {allocator} process {p + 1} {side} ({rows[0]['process_wall_s']:.0f} s): "
                        f"first compile {rows[0]['first_compile_s']:.2f} s, copy {rows[0]['copy_GBps']:.1f} GB/s, "
                        f"{rows[0]['threads']} threads; compiled ms: "
                        + ", ".join(f"{r['unit']} {r['compiled_s'] * 1e3:.3f}" for r in rows))
                    save_json(a.out, results, partial=True, quiet=True)  # --report-from can make a table of it
    except ProcessFailed as e:
        if str(e) not in results["failures"]:
            log(f"FAILED: {e}")
            results["failures"].append(str(e))
        results["processes"] += e.rows
        save_json(a.out, results, partial=True)
        log("stopped: nothing is written to the table when a result fails its check (--keep-going: time the rest)")
        sys.exit(1)
    finally:
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    results["meta"]["wall_s"] = time.perf_counter() - started
    results["meta"]["load_average_at_end"] = os.getloadavg()[0]
    save_json(a.out, results)
    if os.path.exists(json_path(a.out) + ".partial"):
        os.remove(json_path(a.out) + ".partial")
    text = write_report(results)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    log(f"wrote {a.out} and {json_path(a.out)} in {results['meta']['wall_s'] / 60:.1f} min")
    if results["failures"]:
        log(f"{len(results['failures'])} check(s) failed (above); those workloads are not in the table")
        sys.exit(1)


def prepare_and_check(a, runner, work, workloads, results):
    """Phase 1. Returns the units (workload at a scale) with their directories; raises ProcessFailed on
    the first failure unless --keep-going, which records it in results['failures'] and marks the unit."""
    units = [{"name": f"{name}@{scale}", "workload": name, "scale": scale, "dir": os.path.join(work, f"{name}-scale{scale}"),
              "measured_as": None, "failed": False, "checks": []} for scale in a.scales for name in workloads]
    seen = {}
    for unit, prepared in zip(units, runner.prepare(units)):
        unit["prepared"] = prepared
        results["meta"].setdefault("torch", prepared["torch"])
        key = (unit["workload"], json.dumps(prepared["inputs"]))
        if key in seen:  # the same inputs at another scale: measured once
            unit["measured_as"] = seen[key]["name"]
            shutil.rmtree(unit["dir"], ignore_errors=True)
        else:
            seen[key] = unit
    if a.skip_check_phase:
        results["units"] = [{k: v for k, v in u.items() if k != "dir"} for u in units]
        return units
    checked = [u for u in units if u["measured_as"] is None]
    by_key = {(u["workload"], u["scale"]): u for u in checked}
    for side in ("kiln", "torch"):
        todo = checked
        while todo:  # one process checks every workload; after a failure (--keep-going) the next ones
            try:
                rows, failure = getattr(runner, side)([u["dir"] for u in todo], a.allocators[0], check_only=True), None
            except ProcessFailed as e:
                rows, failure = e.rows, str(e)
            for row in rows:
                by_key[row["workload"], row["scale"]]["checks"].append(row)
            if failure is None:
                break
            failed = by_key[rows[-1]["workload"], rows[-1]["scale"]] if rows else todo[0]
            failed["failed"] = True
            results["failures"].append(failure)
            log(f"FAILED: {failure}")
            if not a.keep_going:
                results["units"] = [{k: v for k, v in u.items() if k != "dir"} for u in units]
                raise ProcessFailed(failure)
            todo = todo[todo.index(failed) + 1:]
    for unit in units:
        if unit["measured_as"]:
            unit["failed"] = seen_unit(units, unit["measured_as"])["failed"]
        elif not unit["failed"]:
            log(f"checked {unit['name']}: {summarize_checks(unit['checks'])}")
        results["units"].append({k: v for k, v in unit.items() if k != "dir"})
    return units


def seen_unit(units, name):
    return next(u for u in units if u["name"] == name)


def summarize_checks(rows):
    worst = {}
    for row in rows:
        for c in row["checks"]:
            worst[c["result"]] = max(worst.get(c["result"], 0.0), c["max_abs_err"])
    return ", ".join(f"{k} max abs err {v:.2g}" for k, v in worst.items())


def json_path(out):
    return os.path.splitext(out)[0] + ".json"


def save_json(out, results, partial=False, quiet=False):
    path = json_path(out) + (".partial" if partial else "")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    if partial and not quiet:
        log(f"what was measured before the failure: {path} (bench/run_compiled.py --report-from it)")


if __name__ == "__main__":
    main()
