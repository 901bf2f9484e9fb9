#!/bin/bash
# A/B of streaming stores (KILN_STREAM_STORES=0 / 1 / auto) on the device host, kiln only, full shapes.
set -u
R=$PWD; D=$R/.devcarry; W=/tmp/abw; mkdir -p $W $OUT
[ -d $D/libs ] || (mkdir -p $D/libs && tar xJf $D/libs.tar.xz -C $D/libs)
export LD_LIBRARY_PATH=$D:$D/libs KILN_INCLUDE_DIR=$R/src MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 OMP_NUM_THREADS=16
for w in $2; do [ -d $W/$w ] || python3 bench/torch_suite.py prepare --workload $w --scale ${SCALE:-1} --dir $W/$w > /dev/null 2>>$OUT/err.txt; done
for p in $1; do for w in $2; do for v in 0 1 auto; do
  KILN_STREAM_STORES=$v KILN_CACHE_DIR=$W/kc_s$v TMPDIR=$W $D/build/bench/kiln_compiled_bench --dir $W/$w --reps 20 --warmup 3 --copy-mib 512 2>>$OUT/err.txt | python3 -c "import json,sys; d=json.load(sys.stdin); d.pop('checks',None); print(json.dumps(d))" | sed "s/^{/{\"stream\": \"$v\", \"p\": $p, /" >> $OUT/s.jsonl
done; done; done
python3 - <<PY
import json
for l in open("$OUT/s.jsonl"):
    d = json.loads(l)
    print(d["p"], d["workload"], "stream", d["stream"], "compiled %.2f ms" % (1e3*(d.get("compiled_s") or -1)), "eager %.2f" % (1e3*(d.get("eager_s") or -1)), "copy %.0f GB/s" % (d.get("copy_GBps") or 0), d.get("check_failed"))
PY
