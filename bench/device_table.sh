#!/usr/bin/env bash
# The compiled suite's full table on the device tool's GPU machine, whose host has PyTorch and a C++
# compiler but none of kiln's libraries. A run takes about 19 minutes and a device call at most 10,
# so it runs in the background and later calls poll it; everything lives under /tmp, because each
# call re-syncs the tree and removes ignored folders it was not asked to carry.
#
# Here:       bench/device_bundle.sh build-probe/kiln.tar.xz      (build-probe/: ignored, carried)
# 1st call:   bench/device_table.sh start build-probe/kiln.tar.xz COMMIT [run_compiled.py options...]
#             (e.g. --allocators no-mmap: the equal-allocator column alone, in half the time)
# Next calls: bench/device_table.sh poll 570     (back to back: the machine goes back after 30 s idle)
# The last poll copies the table and its JSON to $OUT.
set -euo pipefail
case ${1:-} in
  start)
    bundle=$2 commit=$3
    mkdir -p /tmp/dc /tmp/bo /tmp/repo
    tar xJf "$bundle" -C /tmp/dc
    cp -r bench src /tmp/repo/
    cd /tmp/repo
    export LD_LIBRARY_PATH=/tmp/dc/lib KILN_INCLUDE_DIR=/tmp/repo/src KILN_COMMIT=$commit
    nohup setsid python3 bench/run_compiled.py --python python3 --build /tmp/dc/build --scales 1,8 --processes 3 \
      --reps 10 --warmup 2 --skip-check-phase --work-dir /tmp/bw --out /tmp/bo/compiled_cpu_host.md "${@:4}" \
      > /tmp/bo/log.txt 2>&1 &
    sleep 20
    cat /tmp/bo/log.txt
    lscpu | grep -i "model name\|^CPU(s)\|^Model:"
    ;;
  poll)
    for _ in $(seq 1 $((${2:-570} / 10))); do
      pgrep -f run_compiled.py > /dev/null || break
      sleep 10
    done
    tail -c 3000 /tmp/bo/log.txt
    cp /tmp/bo/* "${OUT:-/tmp}/" 2>/dev/null || true
    ;;
  *)
    echo "usage: bench/device_table.sh start BUNDLE COMMIT | poll [SECONDS]" >&2
    exit 2
    ;;
esac
