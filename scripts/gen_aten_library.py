#!/usr/bin/env python3
"""Writes PyTorch's whole `aten::` operator library into kiln's op table as data.

Run with the pinned PyTorch when the pin changes (docs/adding_an_op.md):

    .venv/bin/python scripts/gen_aten_library.py

Every `aten::` overload the pinned PyTorch registers, with its exact schema and tags, that
`src/kiln/ops/native_ops.def` (the ops kiln implements) does not already declare, becomes a
KILN_DECLARED_OP row in src/kiln/ops/aten_library/*.def with the reason kiln does not implement it.
A declared op is known to kiln: calling or loading one is a kiln::Error that names the op and the
reason, never "unknown operator". Rows of native_ops.def whose schema differs from PyTorch's are
reported and fail the run (schemas are facts).
"""
import argparse
import pathlib
import re
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
NATIVE = ROOT / "src/kiln/ops/native_ops.def"
OUT_DIR = ROOT / "src/kiln/ops/aten_library"
ROWS_PER_FILE = 900

# PyTorch's tags that kiln's TagSet carries (ops/op_info.h); `view` and `inplace` come from the schema.
KILN_TAGS = {"core", "pointwise", "reduction", "nondeterministic_seeded", "dynamic_output_shape",
             "data_dependent_output"}

# The first rule whose pattern matches the op's name gives its reason (re.search on the name
# without the overload). Order matters: the specific families come before the general ones.
REASONS = [
    (r"sparse|coalesce|^_?indices$|^_?values$|crow_indices|ccol_indices|col_indices|row_indices|"
     r"_nnz|dense_dim|to_dense|_to_cpu|_compressed|^_validate_", "sparse tensors (kiln's tensors are dense and strided)"),
    (r"quantiz|^q_|^_?int_repr|qscheme|fbgemm|_per_tensor|_per_channel|choose_qparams|_saturate_weight|"
     r"^quantized_|_empty_affine|_empty_per_channel|^_weight_int|^_convert_weight|_dyn_quant|^_wrapped_",
     "quantized tensors and their kernels"),
    (r"nested|^_jagged|_padded_dense|^_nt_", "nested tensors"),
    (r"mkldnn|onednn|^_mkl", "oneDNN (mkldnn) tensors and their ops"),
    (r"cudnn|miopen|cufft|_cuda|^cuda|_cslt|cusparselt|_mps|^mps|vulkan|nnpack|xnnpack|_efficientzerotensor|"
     r"_cutlass|_scaled_mm|_scaled_grouped_mm|_grouped_mm|_fused_moving_avg|_cummax_helper|_cummin_helper|"
     r"_flash_attention|_efficient_attention|_cudnn|_scaled_dot_product_cudnn|_scaled_dot_product_efficient|"
     r"_scaled_dot_product_flash_attention$|_triton|_fused_sdp_choice|_use_cudnn",
     "a vendor library's or device's private op (cuDNN, MIOpen, MPS, CUTLASS, Triton, ...)"),
    (r"^_foreach_", "multi-tensor (_foreach) ops"),
    (r"^_fused_(adam|adamw|sgd|adagrad)", "fused optimizer steps"),
    (r"^_?fft_|^_fft|stft|istft", "FFTs beyond kiln's fft_r2c/fft_c2r/fft_c2c"),
    (r"cholesky|(^|_)qr$|svd|(^|_)eig|slogdet|logdet|(^|_)det$|^inverse|(^|_)inv(_ex)?$|solve|lstsq|geqrf|"
     r"ormqr|orgqr|householder|pinv|matrix_exp|matrix_rank|(^|_)lu($|_)|ldl|(^|_)cond$|tensorinv|"
     r"_linalg_check_errors",
     "linear algebra kiln has no kernel for yet (non-symmetric eig, lstsq, LDL, ...)"),
    (r"backward", "a backward op (kiln trains through PyTorch's autograd until kiln's own)"),
    (r"^_?(c10d|_allgather|_reduce_scatter|all_reduce|_coalescing)", "distributed collectives"),
    (r"^_?(has_|is_|_is_|_has_)|^_version|^_debug|^retains_grad|^requires_grad_|^_fw_primal|^_make_dual|"
     r"^_unpack_dual|^_propagate_xla|^_new_zeros_with_same_feature|^set_data|^data$|^_backward|^output_nr|"
     r"^_autocast|^_set_|^_functionalize|^_lazy_clone|^_conj|^_neg_view|^resolve_|^_assert_async|"
     r"^_print|^_nested|^_use_|^_cast_|^align_|^refine_names|^rename|^_shape_as_tensor|^sym_",
     "a Python, autograd or dispatcher internal with no meaning in a kiln graph"),
]
# Overloads left out of the table, with why (docs/adding_an_op.md).
LEFT_OUT = {
    "aten::_test_string_default": "PyTorch's own schema-parser test op: its string defaults hold escaped quotes",
}
# Types kiln's schema language does not have; an overload using one is left out.
FOREIGN_TYPES = re.compile(r"\bStorage\b|\bStream\b|\bDict\(|\bQScheme\b|__torch__")
FOREIGN_REASON = "a type kiln's schema language does not have (Storage, Stream, Dict, QScheme, a TorchScript class)"
COMPOSITE = "composite: its decomposition is not written yet"
DEFAULT = "not implemented yet"


# A parsed schema prints enum defaults as their values; native_functions.yaml (and kiln's parser)
# spells them by name.
MEMORY_FORMATS = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]
LAYOUTS = ["strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged"]


DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32,
          torch.float64, torch.complex32, torch.complex64, torch.complex128, torch.bool, torch.qint8,
          torch.quint8, torch.qint32, torch.bfloat16]


def yaml_spelling(schema_text):
    """The schema as native_functions.yaml writes its defaults: enums by name, strings in single quotes."""
    enums = {"MemoryFormat": MEMORY_FORMATS, "Layout": LAYOUTS,
             "ScalarType": [str(d).split(".", 1)[1] for d in DTYPES]}
    for kind, names in enums.items():
        schema_text = re.sub(rf"(\b{kind}\??\s+\w+)=(\d+)", lambda m: f"{m.group(1)}={names[int(m.group(2))]}",
                             schema_text)
    return re.sub(r"(\bstr\??\s+\w+)=\"([^\"'\\\\]*)\"", r"\1='\2'", schema_text)


def native_rows():
    """native_ops.def's rows: qualified name -> (schema, tags)."""
    rows = {}
    for m in re.finditer(r'KILN_(?:LEAF|COMPOUND)_OP\("([^"]*)", "([^"]*)"', NATIVE.read_text()):
        schema = m.group(1)
        head = schema.split("(", 1)[0]
        rows["aten::" + head if "::" not in head else head] = (schema, m.group(2).split())
    return rows


def torch_schemas():
    out = []
    for s in torch._C._jit_get_all_schemas():
        if not s.name.startswith("aten::"):
            continue
        text = str(s)
        if "..." in text:  # Python-only varargs helpers (aten::format), not graph ops
            continue
        name = s.name[len("aten::"):]
        overload = s.overload_name
        packet = getattr(torch.ops.aten, name)
        op = getattr(packet, overload or "default")
        tags = [str(t).split(".", 1)[1] for t in op.tags]
        qualified = s.name + ("." + overload if overload else "")
        try:
            composite = torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd")
        except RuntimeError:  # TorchScript builtins (aten::is_scripting) are not dispatcher ops
            continue
        out.append((qualified, text[len("aten::"):], tags, composite))
    return out


def arguments_of(schema):
    return [(a.name, str(a.type)) for a in schema.arguments]


def functional_of(qualified, parsed, native):
    """The native op an in-place or out= overload runs through (kernels/inplace.cpp), or None."""
    name, _, overload = qualified.partition(".")
    if name.endswith("_") and not name.endswith("__"):
        target = name[:-1] + ("." + overload if overload else "")
        if target in native:
            return target
        # normal_ -> normal_functional: PyTorch's name where the plain one has other overloads
        alternative = name[:-1] + "_functional"
        return alternative if not overload and alternative in native else None
    args = arguments_of(parsed[qualified])
    if not args or args[-1][0] != "out":
        return None
    for candidate, schema in native.items():
        if candidate.partition(".")[0] == name and arguments_of(parsed[candidate]) == args[:-1]:
            return candidate
    return None


def reason_for(qualified, tags, composite, functional):
    name = qualified[len("aten::"):].split(".", 1)[0]
    if functional:
        return f"runs as {functional} and a copy (kernels/inplace.cpp)"
    for pattern, reason in REASONS:
        if re.search(pattern, name):
            return reason
    if "out" in tags:
        return "an out= variant whose functional op kiln does not implement"
    if "inplace" in tags or (name.endswith("_") and not name.startswith("_")):
        return "an in-place variant whose functional op kiln does not implement"
    return COMPOSITE if composite else DEFAULT


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the files on disk differ")
    args = parser.parse_args()
    native = native_rows()
    schemas = torch_schemas()
    parsed = {q: torch._C.parse_schema("aten::" + text) for q, text, _, _ in schemas}
    parsed.update({q: torch._C.parse_schema("aten::" + text) for q, (text, _) in native.items() if q not in parsed})
    mismatched = []
    rows = []
    left_out = []
    for qualified, schema, tags, composite in sorted(schemas):
        if FOREIGN_TYPES.search(schema):
            left_out.append(f"//   {qualified}: {FOREIGN_REASON}")
            continue
        if qualified in LEFT_OUT:
            left_out.append(f"//   {qualified}: {LEFT_OUT[qualified]}")
            continue
        if qualified in native:
            # Compared as PyTorch parses them: native_functions.yaml spells defaults its own way
            # (`eps=1e-05`, `reduction=Mean`), the parsed schema prints them as values.
            kiln_schema, kiln_tags = native[qualified]
            if str(torch._C.parse_schema("aten::" + kiln_schema))[len("aten::"):] != schema:
                mismatched.append(f"  kiln:  {kiln_schema}\n  torch: {schema}")
            # Core ATen is what PyTorch tags `core`: the same set.
            if ("core" in kiln_tags) != ("core" in tags):
                mismatched.append(f"  {qualified}: `core` in kiln's tags {kiln_tags}, PyTorch's {tags}")
            continue
        kiln_tags = " ".join(t for t in tags if t in KILN_TAGS)
        reason = reason_for(qualified, tags, composite, functional_of(qualified, parsed, native))
        escaped = yaml_spelling(schema).replace("\\", "\\\\").replace('"', '\\"')
        rows.append(f'KILN_DECLARED_OP("{escaped}", "{kiln_tags}", "{reason}")')
    if mismatched:
        print(f"native_ops.def rows whose schema or core tag is not PyTorch {torch.__version__}'s:", file=sys.stderr)
        print("\n".join(mismatched), file=sys.stderr)
        sys.exit(1)
    header = (f"// Generated by scripts/gen_aten_library.py from PyTorch {torch.__version__.split('+')[0]}: do not edit.\n"
              "// PyTorch's aten:: overloads that native_ops.def does not implement, each with its schema, its\n"
              "// tags (those kiln's TagSet carries) and why kiln does not run it:\n"
              "//   KILN_DECLARED_OP(schema, tags, reason)\n")
    files = {}
    for i in range(0, len(rows), ROWS_PER_FILE):
        files[OUT_DIR / f"part{i // ROWS_PER_FILE}.def"] = header + "\n".join(rows[i:i + ROWS_PER_FILE]) + "\n"
    files[OUT_DIR / "all.def"] = header.splitlines()[0] + "\n// Left out of the table:\n" + "\n".join(left_out) + "\n" + "".join(
        f'#include "kiln/ops/aten_library/{p.name}"\n' for p in sorted(files))
    if args.check:
        stale = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
        extra = [p for p in OUT_DIR.glob("*.def") if p not in files]
        if stale or extra:
            print("aten_library is stale: run scripts/gen_aten_library.py", file=sys.stderr)
            sys.exit(1)
        return
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for p in OUT_DIR.glob("*.def"):
        if p not in files:
            p.unlink()
    for p, text in files.items():
        p.write_text(text)
    print(f"{len(rows)} declared ops in {len(files) - 1} files; {len(native)} native rows; "
          f"{len(schemas)} aten overloads in PyTorch {torch.__version__}")


if __name__ == "__main__":
    main()
