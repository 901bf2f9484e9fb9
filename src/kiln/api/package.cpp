#include "kiln/api/package.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kiln/compiler/codegen/cache_size.h"
#include "kiln/graph/parser.h"
#include "kiln/graph/printer.h"
#include "kiln/import/json.h"
#include "kiln/import/pt2.h"
#include "kiln/import/zip.h"
#include "kiln/import/zip_writer.h"
#include "kiln/runtime/executable.h"
#include "kiln/support/sha256.h"

namespace kiln {
namespace {

constexpr int64_t kFormatVersion = 1;
const std::string kRoot = "kiln/";

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string int_list(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::string_view input_kind_name(import::InputKind k) {
  switch (k) {
    case import::InputKind::UserInput: return "user_input";
    case import::InputKind::Parameter: return "parameter";
    case import::InputKind::Buffer: return "buffer";
    case import::InputKind::TensorConstant: return "tensor_constant";
  }
  return "?";
}

std::string_view output_kind_name(import::OutputKind k) {
  switch (k) {
    case import::OutputKind::UserOutput: return "user_output";
    case import::OutputKind::BufferMutation: return "buffer_mutation";
    case import::OutputKind::UserInputMutation: return "user_input_mutation";
    case import::OutputKind::LossOutput: return "loss_output";
  }
  return "?";
}

template <class Kind, class Name>
Kind kind_named(const std::string& name, Name name_of, std::initializer_list<Kind> kinds, const std::string& what) {
  for (Kind k : kinds) {
    if (name_of(k) == name) return k;
  }
  KILN_FAIL(ErrorKind::Value, "{}: unknown kind '{}'", what, name);
}

DType dtype_named(const std::string& name, const std::string& what) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  KILN_FAIL(ErrorKind::Value, "{}: unknown dtype '{}'", what, name);
}

Shape shape_of(const json::Value& v) {
  Shape s;
  for (const auto& e : v.as_array()) s.push_back(e.as_int());
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KILN_CHECK(f.good(), "cannot read {}", path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

compiler::PipelineOptions pipeline_options(bool emulate) {
  compiler::PipelineOptions o;
  o.emulate_precision_casts = emulate;
  return o;
}

std::string flags_missing(const std::string& want, const std::string& have) {
  std::set<std::string> have_set;
  std::istringstream h(have);
  for (std::string f; h >> f;) have_set.insert(f);
  std::vector<std::string> missing;
  std::istringstream w(want);
  for (std::string f; w >> f;) {
    if (!have_set.count(f)) missing.push_back(f);
  }
  return fmt::format("{}", fmt::join(missing, " "));
}

}  // namespace

// The GNU build ID the linker stamped into the object holding this function (libkiln.so): a hash of
// its contents, so any change to kiln's code gives another ID.
std::string kiln_build_id() {
  struct Search {
    uintptr_t address;
    std::string id;
  } search{reinterpret_cast<uintptr_t>(&kiln_build_id), ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        bool mine = false;
        for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          mine = ph.p_type == PT_LOAD && s->address >= start && s->address < start + ph.p_memsz;
        }
        if (!mine) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
          const unsigned char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const unsigned char* name = p + sizeof(ElfW(Nhdr));
            const unsigned char* desc = name + ((note->n_namesz + 3) & ~3u);
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              for (uint32_t k = 0; k < note->n_descsz; ++k) s->id += fmt::format("{:02x}", desc[k]);
              return 1;
            }
            p = desc + ((note->n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id.empty() ? "unknown" : search.id;
}

std::string machine_isa() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (!line.starts_with("flags")) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::vector<std::string> flags;
    for (std::string f; words >> f;) flags.push_back(f);
    std::sort(flags.begin(), flags.end());
    return fmt::format("{}", fmt::join(flags, " "));
  }
  return "";
}

void compile_package(const Model& model, const std::string& path, const PackageOptions& options) {
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  KILN_CHECK(options.compile.backend == "inductor", "compile_package: backend '{}'; packages hold inductor kernels",
             options.compile.backend);
  const ModelSignature& sig = model.signature();
  bool emulate = options.compile.emulate_precision_casts;

  progress("tracing to the prims level");
  std::vector<std::string> names;
  for (const auto& in : sig.inputs()) names.push_back(in.name);
  trace::TraceOptions trace_options{.level = trace::Level::Prims, .names = names, .keep_ops_without_prims = true};
  graph::Graph g = trace::trace(model.forward(), sig.graph_inputs(sig.meta_inputs()), trace_options);
  KILN_CHECK_KIND(g.attrs().empty(), ErrorKind::NotImplemented,
                  "compile_package: {}: the traced graph holds constant tensors (get_attr), which packages do not "
                  "store yet",
                  sig.source());
  std::string text = graph::print(g);
  KILN_CHECK_KIND(graph::print(graph::parse(text)) == text, ErrorKind::Internal,
                  "compile_package: {}: the prims graph does not print and parse back to itself", sig.source());

  // The kernels are built from the graph as the package stores it (parsed back), which is what a load
  // regenerates and checks against.
  progress("generating and compiling code");
  compiler::PipelineOptions build_options = pipeline_options(emulate);
  build_options.build_progress = [&](size_t done, size_t total) {
    progress(fmt::format("compiled {} of {} kernels", done, total));
  };
  graph::Graph stored = graph::parse(text);
  compiler::CompiledGraph c = compiler::run_pipeline(stored, /*build=*/true, build_options);
  std::string source_hash = sha256_hex(c.source.code);

  progress("writing " + path);
  ZipWriter zip(path);
  std::map<const StorageImpl*, size_t> storages;
  std::string inputs;
  for (size_t i = 0; i < sig.inputs().size(); ++i) {
    const import::InputSpec& spec = sig.inputs()[i];
    const graph::TensorMeta& m = sig.metas()[i];
    std::string storage = "null";
    int64_t offset = 0;
    if (spec.kind != import::InputKind::UserInput) {
      const Tensor& t = sig.bound()[i];
      auto [it, fresh] = storages.try_emplace(t.storage().get(), storages.size());
      if (fresh) {
        zip.add(fmt::format("{}storage/{}", kRoot, it->second),
                std::span<const std::byte>(static_cast<const std::byte*>(t.storage()->data()), t.storage()->nbytes()));
      }
      storage = std::to_string(it->second);
      offset = t.storage_offset();
    }
    inputs += fmt::format(
        "{}\n    {{\"kind\": {}, \"name\": {}, \"target\": {}, \"dtype\": {}, \"sizes\": {}, \"strides\": {}, "
        "\"storage\": {}, \"offset\": {}}}",
        i ? "," : "", quote(input_kind_name(spec.kind)), quote(spec.name), quote(spec.target),
        quote(dtype_name(m.dtype)), int_list(m.sizes), int_list(m.strides), storage, offset);
  }
  std::string outputs;
  for (size_t i = 0; i < sig.outputs().size(); ++i) {
    const import::OutputSpec& o = sig.outputs()[i];
    outputs += fmt::format("{}\n    {{\"kind\": {}, \"name\": {}, \"target\": {}}}", i ? "," : "",
                           quote(output_kind_name(o.kind)), quote(o.name), quote(o.target));
  }
  std::string manifest = fmt::format(
      "{{\n  \"format\": \"kiln-package\",\n  \"format_version\": {},\n  \"kiln_build\": {},\n  \"model\": {},\n"
      "  \"isa\": {},\n  \"llc_bytes\": {},\n  \"emulate_precision_casts\": {},\n  \"source_sha256\": {},\n"
      "  \"kernels\": {},\n  \"inputs\": [{}\n  ],\n  \"outputs\": [{}\n  ]\n}}\n",
      kFormatVersion, quote(kiln_build_id()), quote(sig.source()), quote(machine_isa()),
      compiler::last_level_cache_bytes(), emulate ? "true" : "false", quote(source_hash), c.source.kernels.size(),
      inputs, outputs);
  zip.add(kRoot + "manifest.json", std::string_view(manifest));
  zip.add(kRoot + "graph.txt", std::string_view(text));
  std::string library = read_file(c.library->path());
  zip.add(kRoot + "kernels.so", std::string_view(library));
  zip.finish();
  progress(fmt::format("wrote {}: {} kernels, {} stored tensors", path, c.source.kernels.size(), storages.size()));
}

struct Package::State {
  ZipArchive zip;
  ModelSignature signature;
  std::shared_ptr<runtime::Executable> executable;
  size_t kernels = 0;
};

const ModelSignature& Package::signature() const { return state_->signature; }
size_t Package::kernel_count() const { return state_->kernels; }

std::vector<Tensor> Package::run(const std::vector<Tensor>& inputs) const {
  const ModelSignature& s = state_->signature;
  std::vector<Tensor> all = s.graph_inputs(inputs);
  return s.user_outputs(inputs, state_->executable->run(all));
}

Package load_package(const std::string& path) {
  auto state = std::make_shared<Package::State>(Package::State{ZipArchive::open(path), {}, nullptr, 0});
  const ZipArchive& zip = state->zip;
  const std::string manifest_record = kRoot + "manifest.json";
  KILN_CHECK(zip.find(manifest_record), "{}: not a kiln package (no {} record)", path, manifest_record);
  std::string manifest_text(zip.read(manifest_record).text());
  json::Value m = json::parse(manifest_text, path + ":" + manifest_record);
  KILN_CHECK(m.at("format").as_string() == "kiln-package" && m.at("format_version").as_int() == kFormatVersion,
             "{}: package format {} version {}; this kiln reads kiln-package version {}", path,
             m.at("format").as_string(), m.at("format_version").as_int(), kFormatVersion);
  const std::string& build = m.at("kiln_build").as_string();
  KILN_CHECK(build == kiln_build_id(),
             "{}: compiled by kiln build {}, this is kiln build {}; compile the model again with this kiln", path,
             build, kiln_build_id());
  std::string missing = flags_missing(m.at("isa").as_string(), machine_isa());
  KILN_CHECK(missing.empty(),
             "{}: compiled for another CPU: this machine lacks the instruction set extensions {} that the package's "
             "kernels may use; compile the model on this machine",
             path, missing);

  // The graph, and the compiler's passes up to code generation (no C++ compiler).
  std::string text(zip.read(kRoot + "graph.txt").text());
  graph::Graph g = graph::parse(text);
  std::vector<graph::TensorMeta> metas;
  for (const graph::Node* n : g.placeholders()) metas.push_back(n->meta().at(0));
  compiler::CompiledGraph c =
      compiler::run_pipeline(g, /*build=*/false, pipeline_options(m.at("emulate_precision_casts").as_bool()));
  const std::string& want = m.at("source_sha256").as_string();
  KILN_CHECK(sha256_hex(c.source.code) == want,
             "{}: the code this machine generates for the package's graph differs from the package's kernels (its "
             "last-level cache is {} bytes, the package's {}; KILN_STREAM_STORES changes it too); compile the model "
             "on this machine",
             path, compiler::last_level_cache_bytes(), m.at("llc_bytes").as_int());

  // The kernels: the package's shared object, loaded from memory (memfd) without a temporary file.
  std::span<const std::byte> so = zip.read(kRoot + "kernels.so").bytes;
  int fd = memfd_create("kiln-kernels", MFD_CLOEXEC);
  KILN_CHECK(fd >= 0, "{}: cannot create memory for the kernels: {}", path, std::strerror(errno));
  bool written = ::write(fd, so.data(), so.size()) == static_cast<ssize_t>(so.size());
  std::shared_ptr<compiler::Library> library;
  if (written) {
    try {
      library = compiler::Library::open(fmt::format("/proc/self/fd/{}", fd));
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  ::close(fd);
  KILN_CHECK(written, "{}: cannot write the kernels to memory", path);
  c.library = std::move(library);
  state->kernels = c.source.kernels.size();
  state->executable = std::make_shared<runtime::Executable>(metas, std::move(c));

  // The signature, with the bound tensors over the package's stored records.
  std::vector<import::InputSpec> inputs;
  std::vector<Tensor> bound;
  std::map<int64_t, Ref<StorageImpl>> storages;
  const json::Array& specs = m.at("inputs").as_array();
  KILN_CHECK(specs.size() == metas.size(), "{}: {} input specs for a graph of {} inputs", path, specs.size(),
             metas.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const json::Value& s = specs[i];
    std::string what = fmt::format("{}: input {}", path, i);
    import::InputSpec spec{kind_named(s.at("kind").as_string(), input_kind_name,
                                      {import::InputKind::UserInput, import::InputKind::Parameter,
                                       import::InputKind::Buffer, import::InputKind::TensorConstant},
                                      what),
                           s.at("name").as_string(), s.at("target").as_string()};
    DType dtype = dtype_named(s.at("dtype").as_string(), what);
    Shape sizes = shape_of(s.at("sizes")), strides = shape_of(s.at("strides"));
    KILN_CHECK(dtype == metas[i].dtype && sizes == metas[i].sizes && strides == metas[i].strides,
               "{} ('{}') disagrees with the graph's placeholder", what, spec.name);
    Tensor t;
    if (!s.at("storage").is_null()) {
      int64_t index = s.at("storage").as_int();
      auto [it, fresh] = storages.try_emplace(index);
      if (fresh) {
        it->second = import::record_storage(zip.read(fmt::format("{}storage/{}", kRoot, index)), 64);
      }
      int64_t offset = s.at("offset").as_int();
      int64_t span = storage_span(sizes, strides);
      KILN_CHECK(offset >= 0 && (span == 0 || (offset + span) * static_cast<int64_t>(element_size(dtype)) <=
                                                  static_cast<int64_t>(it->second->nbytes())),
                 "{} ('{}') reaches past its stored bytes", what, spec.name);
      t = Tensor(make_tensor(it->second, sizes, strides, offset, dtype));
    }
    inputs.push_back(std::move(spec));
    bound.push_back(std::move(t));
  }
  std::vector<import::OutputSpec> outputs;
  for (const auto& o : m.at("outputs").as_array()) {
    outputs.push_back({kind_named(o.at("kind").as_string(), output_kind_name,
                                  {import::OutputKind::UserOutput, import::OutputKind::BufferMutation,
                                   import::OutputKind::UserInputMutation, import::OutputKind::LossOutput},
                                  path),
                       o.at("name").as_string(), o.at("target").as_string()});
  }
  state->signature = ModelSignature(std::move(inputs), std::move(outputs), std::move(metas), std::move(bound), path);
  Package p;
  p.state_ = std::move(state);
  return p;
}

}  // namespace kiln
