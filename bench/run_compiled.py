#!/usr/bin/env python3
"""The compiled CPU suite (`make bench`): kiln eager and kiln compiled (build/bench/kiln_compiled_bench)
against PyTorch eager and torch.compile (bench/torch_suite.py), on the workloads of
shared/reference/torch_baseline.py, in separate processes, on the same inputs.

1. Prepare and check: for each scale and workload, PyTorch writes the seeded inputs and the expected
   outputs with their tolerances (torch_suite.py prepare); one kiln process and one PyTorch process
   compile the workload and compare every result (kiln compiled, kiln eager, torch.compile, torch
   eager) with them. A result outside its tolerance fails the run here, before anything is timed
   (--keep-going: time the other workloads, and still exit non-zero). A workload whose inputs are the
   same at two scales is prepared at both and measured once.
2. Time: for each workload, each allocator policy, processes p = 1..P: a kiln process and a PyTorch
   process, alternately first. Each process checks its results again before timing, measures the
   first compile in the process, a later cold compile, the medians of REPS eager and compiled calls,
   and the copy bandwidth; all cores (OMP_NUM_THREADS) on both sides.
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
    def __init__(self, message, row=None):
        super().__init__(message)
        self.row = row  # what the process reported before it failed, if anything


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
        """Runs one process; returns its JSON line as a dict, or raises ProcessFailed with its stderr."""
        env = self.env(allocator)
        env["TMPDIR"] = tempfile.mkdtemp(prefix="tmp-", dir=self.work)  # the caches of both sides go there
        start = time.perf_counter()
        try:
            p = subprocess.run(command, env=env, capture_output=True, text=True)
        finally:
            shutil.rmtree(env["TMPDIR"], ignore_errors=True)
        wall = time.perf_counter() - start
        rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        if rows:
            rows[0]["process_wall_s"] = wall
        if p.returncode != 0 or len(rows) != 1:
            kind = "a result is outside its tolerance" if p.returncode == 3 else f"exit status {p.returncode}"
            raise ProcessFailed(f"{what} failed ({kind}).\n  command: {shlex.join(command)}\n"
                                + "\n".join("  | " + line for line in p.stderr.strip().splitlines()[-15:]),
                                rows[0] if len(rows) == 1 else None)
        return rows[0]

    def prepare(self, workload, scale, dir):
        return self.run(f"PyTorch prepare of {workload} at scale {scale}",
                        [self.args.python, self.suite, "prepare", "--workload", workload, "--scale", str(scale),
                         "--dir", dir], "glibc")

    def kiln(self, dir, allocator, check_only=False):
        command = [self.kiln_binary, "--dir", dir, "--reps", str(self.args.reps), "--warmup", str(self.args.warmup)]
        return self.run(f"kiln process ({os.path.basename(dir)}, {allocator})",
                        command + (["--check-only"] if check_only else []), allocator)

    def torch(self, dir, allocator, check_only=False):
        command = [self.args.python, self.suite, "time", "--dir", dir, "--reps", str(self.args.reps), "--warmup",
                   str(self.args.warmup)]
        return self.run(f"PyTorch process ({os.path.basename(dir)}, {allocator})",
                        command + (["--check-only"] if check_only else []), allocator)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    venv = os.path.join(REPO, ".venv", "bin", "python")
    p.add_argument("--python", default=venv if os.path.exists(venv) else "python3",
                   help="a python with PyTorch 2.x and NumPy (default: the repo's .venv, else python3)")
    p.add_argument("--build", default="build", help="kiln's CMake build directory (holds bench/kiln_compiled_bench)")
    p.add_argument("--processes", type=int, default=3, help="processes per side, workload, scale and allocator")
    p.add_argument("--reps", type=int, default=10, help="timed calls per process (after --warmup calls)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--scales", default="1,8",
                   help="comma-separated: the baseline CPU shapes' first dimension is divided by each (1: full)")
    p.add_argument("--allocators", default="glibc,no-mmap",
                   help=f"comma-separated, of {', '.join(ALLOCATORS)} (jemalloc where libjemalloc.so.2 is installed)")
    p.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="OMP_NUM_THREADS for both sides")
    p.add_argument("--out", default="bench/results/compiled_cpu.md", help="the markdown table; the JSON goes beside it")
    p.add_argument("--work-dir", default=None, help="where inputs and expected outputs go (default: a new temp dir)")
    p.add_argument("--check-only", action="store_true", help="prepare and check every workload; time nothing")
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
    if not os.access(os.path.join(a.build, "bench", "kiln_compiled_bench"), os.X_OK):
        p.error(f"no {a.build}/bench/kiln_compiled_bench: build it (cmake --build {a.build} --target "
                "kiln_compiled_bench; bench/ is built when Google Benchmark is installed)")
    if a.processes < 1 or a.reps < 1:
        p.error("--processes and --reps must be at least 1")
    return a


def git_commit():
    try:
        return subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    a = parse_args()
    work = os.path.abspath(a.work_dir or tempfile.mkdtemp(prefix="kiln-bench-"))
    os.makedirs(work, exist_ok=True)
    runner = Runner(a, work)
    workloads = [w for w in WORKLOADS if not a.only or w in a.only]
    results = {
        "meta": {"cpu": cpu_model(), "host": platform.node(), "cores": os.cpu_count(), "threads": a.threads,
                 "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "kiln": git_commit(),
                 "load_average_at_start": os.getloadavg()[0], "python": a.python, "command": shlex.join(sys.argv), "processes": a.processes, "reps": a.reps,
                 "warmup": a.warmup, "scales": a.scales, "allocators": a.allocators,
                 "allocator_env": {k: allocator_description(k) for k in a.allocators}},
        "units": [], "failures": [], "processes": []}
    started = time.perf_counter()
    try:
        units = prepare_and_check(a, runner, work, workloads, results)
        if a.check_only:
            log(f"checked {len(units)} workloads at scales {a.scales}: {len(results['failures'])} failed")
            sys.exit(1 if results["failures"] else 0)
        timed = [u for u in units if u["measured_as"] is None and not u["failed"]]
        total = len(timed) * len(a.allocators) * a.processes * 2
        done = 0
        for unit in timed:
            for allocator in a.allocators:
                for p in range(a.processes):
                    sides = ["kiln", "torch"] if p % 2 == 0 else ["torch", "kiln"]
                    for position, side in enumerate(sides):
                        done += 1
                        where = dict(unit=unit["name"], allocator=allocator, process=p + 1, position=position + 1)
                        try:
                            row = getattr(runner, side)(unit["dir"], allocator)
                        except ProcessFailed as e:
                            (e.row or {}).update(where)
                            raise
                        row.update(where)
                        results["processes"].append(row)
                        log(f"[{done}/{total}] {unit['name']} {allocator} process {p + 1} {side}: eager "
                            f"{row['eager_s'] * 1e3:.3f} ms, compiled {row['compiled_s'] * 1e3:.3f} ms, first compile "
                            f"{row['first_compile_s']:.2f} s, later cold {row['cold_compile_s']:.2f} s, copy "
                            f"{row['copy_GBps']:.1f} GB/s, {row['threads']} threads")
    except ProcessFailed as e:
        if str(e) not in results["failures"]:
            log(f"FAILED: {e}")
            results["failures"].append(str(e))
        if e.row:
            results["processes"].append(e.row)
        save_json(a.out, results, partial=True)
        log("stopped: nothing is written to the table when a result fails its check (--keep-going: time the rest)")
        sys.exit(1)
    finally:
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    results["meta"]["wall_s"] = time.perf_counter() - started
    results["meta"]["load_average_at_end"] = os.getloadavg()[0]
    save_json(a.out, results)
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
    units, seen = [], {}
    for scale in a.scales:
        for name in workloads:
            unit = {"name": f"{name}@{scale}", "workload": name, "scale": scale,
                    "dir": os.path.join(work, f"{name}-scale{scale}"), "measured_as": None, "failed": False}
            unit["prepared"] = runner.prepare(name, scale, unit["dir"])
            results["meta"].setdefault("torch", unit["prepared"]["torch"])
            key = (name, json.dumps(unit["prepared"]["inputs"]))
            if key in seen:  # the same inputs at another scale: measured once
                unit["measured_as"] = seen[key]["name"]
                unit["failed"] = seen[key]["failed"]
                shutil.rmtree(unit["dir"], ignore_errors=True)
            else:
                seen[key] = unit
                unit["checks"], failures = [], []
                for side in ("kiln", "torch"):
                    try:
                        unit["checks"].append(getattr(runner, side)(unit["dir"], a.allocators[0], check_only=True))
                    except ProcessFailed as e:
                        unit["checks"] += [e.row] if e.row else []
                        failures.append(str(e))
                        log(f"FAILED: {e}")
                results["failures"] += failures
                unit["failed"] = bool(failures)
                if failures and not a.keep_going:
                    results["units"].append({k: v for k, v in unit.items() if k != "dir"})
                    raise ProcessFailed(failures[0])
                if not failures:
                    log(f"checked {unit['name']}: {summarize_checks(unit['checks'])}")
            units.append(unit)
            results["units"].append({k: v for k, v in unit.items() if k != "dir"})
    return units


def summarize_checks(rows):
    worst = {}
    for row in rows:
        for c in row["checks"]:
            worst[c["result"]] = max(worst.get(c["result"], 0.0), c["max_abs_err"])
    return ", ".join(f"{k} max abs err {v:.2g}" for k, v in worst.items())


def json_path(out):
    return os.path.splitext(out)[0] + ".json"


def save_json(out, results, partial=False):
    path = json_path(out) + (".partial" if partial else "")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    if partial:
        log(f"what was measured before the failure: {path}")


if __name__ == "__main__":
    main()
