#!/usr/bin/env bash
# kiln sgemm blockings (KILN_SGEMM_KC, KILN_SGEMM_GRID) against oneDNN on the device tool's host, from
# the bundle of bench/device_bundle.sh unpacked in /tmp/dc: kiln_eager_bench's gemm_linear rows, 2
# rounds, one line per row and blocking: blocking, round, shape, ms, FLOP/s.
export LD_LIBRARY_PATH=/tmp/dc/lib
for round in 1 2; do
  for v in KILN_SGEMM_KC=256 KILN_SGEMM_KC=192 KILN_SGEMM_KC=384 KILN_SGEMM_GRID=rows KILN_SGEMM_GRID=cols KILN_GEMM=onednn; do
    env KILN_GEMM=kiln $v /tmp/dc/build/bench/kiln_eager_bench --benchmark_filter=gemm_linear --benchmark_min_time=0.4 2>&1 \
      | awk -v v=$v -v r=$round '/gemm_linear/{split($1,a,"/"); printf "%s r%s %s/%s/%s %s %s\n", v, r, a[2], a[3], a[4], $2, $NF}'
  done
done
