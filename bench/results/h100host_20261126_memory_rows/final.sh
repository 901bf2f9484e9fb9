#!/bin/bash
# Final figures on the device host: kiln (this session's code) and torch.compile interleaved, the
# memory-bound rows, full shapes, no-mmap on both sides; reductions also with the previous kiln
# (streaming stores, no column sums). usage: final.sh PREPARE "P..." "W..."
set -u
R=$PWD; D=$R/.devcarry; W=/tmp/fw; mkdir -p $W $OUT
[ -d $D/libs ] || (mkdir -p $D/libs && tar xJf $D/libs.tar.xz -C $D/libs)
export KILN_INCLUDE_DIR=$R/src MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 OMP_NUM_THREADS=16
export TORCHINDUCTOR_CACHE_DIR=$W/inductor
if [ "$1" = 1 ]; then for w in $3; do python3 bench/torch_suite.py prepare --workload $w --scale ${SCALE:-1} --dir $W/$w > $OUT/prep_$w.json 2>&1 || echo "prepare $w failed"; done; fi
kiln() { # variant workload
  local v=$1 w=$2 bin=$D/build/bench/kiln_compiled_bench lib=$D
  [ $v = prev ] && bin=$D/prev/kiln_compiled_bench lib=$D/prev
  LD_LIBRARY_PATH=$lib:$D/libs KILN_CACHE_DIR=$W/kc_$v TMPDIR=$W $bin --dir $W/$w --reps 10 --warmup 2 --copy-mib 512 2>>$OUT/err.txt | python3 -c "import json,sys; d=json.load(sys.stdin); d.pop('checks',None); d['variant']='$v'; d['p']=$p; print(json.dumps(d))" >> $OUT/final.jsonl
}
torchrun() {
  python3 -c "
import sys, json, io, contextlib; sys.path.insert(0, 'bench'); import torch_suite as t
buf = io.StringIO()
with contextlib.redirect_stdout(buf): t.time_process('$W/$1', 10, 2, False)
d = json.loads(buf.getvalue().strip().splitlines()[-1]); d.pop('checks', None); d['variant']='torch'; d['p']=$p
print(json.dumps(d))" >> $OUT/final.jsonl 2>>$OUT/err.txt
}
for p in $2; do for w in $3; do
  if [ $((p % 2)) = 1 ]; then kiln new $w; torchrun $w; else torchrun $w; kiln new $w; fi
  [ $w = reductions ] && kiln prev $w
  echo "p$p $w $(date +%T)" >> $OUT/progress.txt
done; done
python3 - <<PY
import json
for l in open("$OUT/final.jsonl"):
    d = json.loads(l)
    f = lambda k: "%.2f" % (1e3 * d[k]) if d.get(k) else "-"
    print(d["p"], d["workload"], d["variant"], "compiled", f("compiled_s"), "eager", f("eager_s"), "copy %.0f" % (d.get("copy_GBps") or 0), d.get("check_failed"))
PY
