#!/bin/bash
# A/B of this session's changes on the device host: kiln (new; rmsnorm with eager's roundings;
# pointwise_chain with the old erf) and torch.compile, full shapes, no-mmap, interleaved.
# usage: ab.sh PREPARE(0/1) "P1 P2 ..." "W1 W2 ..."
set -u
R=$PWD; D=$R/.devcarry; W=/tmp/abw; mkdir -p $W $OUT
[ -d $D/libs ] || (mkdir -p $D/libs && tar xJf $D/libs.tar.xz -C $D/libs)
export LD_LIBRARY_PATH=$D:$D/libs KILN_INCLUDE_DIR=$R/src MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000
export OMP_NUM_THREADS=16 TORCHINDUCTOR_CACHE_DIR=$W/inductor
if [ "$1" = 1 ]; then for w in $3; do python3 bench/torch_suite.py prepare --workload $w --scale 1 --dir $W/$w > $OUT/prep_$w.json 2>&1 || echo "prepare $w failed"; done; fi
kiln() { # variant workload env...
  local v=$1 w=$2; shift 2
  env "$@" KILN_CACHE_DIR=$W/kc_$v TMPDIR=$W $D/build/bench/kiln_compiled_bench --dir $W/$w --reps 10 --warmup 2 --copy-mib 512 2>>$OUT/err.txt | python3 -c "import json,sys; d=json.load(sys.stdin); d.pop('checks',None); d['variant']='$v'; d['p']=$p; print(json.dumps(d))" >> $OUT/ab.jsonl
}
torchrun() {
  local w=$1
  python3 -c "
import sys, json, io, contextlib; sys.path.insert(0, 'bench'); import torch_suite as t
buf = io.StringIO()
with contextlib.redirect_stdout(buf): t.time_process('$W/$w', 10, 2, False)
d = json.loads(buf.getvalue().strip().splitlines()[-1]); d.pop('checks', None); d['variant']='torch'; d['p']=$p
print(json.dumps(d))" >> $OUT/ab.jsonl 2>>$OUT/err.txt
}
for p in $2; do for w in $3; do
  start=$(date +%s)
  if [ $((p % 2)) = 1 ]; then kiln new $w; torchrun $w; else torchrun $w; kiln new $w; fi
  [ $w = rmsnorm_bf16 ] && kiln emulate $w KILN_EMULATE_PRECISION_CASTS=1
  [ $w = pointwise_chain ] && kiln olderf $w KILN_INCLUDE_DIR=$D/oldinc
  echo "p$p $w $(( $(date +%s) - start )) s" >> $OUT/progress.txt
done; done
python3 - <<PY
import json
for l in open("$OUT/ab.jsonl"):
    d = json.loads(l)
    print(d["p"], d["workload"], d["variant"], "compiled %.2f ms" % (1e3*d.get("compiled_s") if d.get("compiled_s") else -1), "eager %.2f ms" % (1e3*d.get("eager_s") if d.get("eager_s") else -1), "copy %.0f GB/s" % (d.get("copy_GBps") or 0), "check", d.get("check_failed"))
PY
