// A libFuzzer-compatible driver for builds without libFuzzer (g++, the test suite): runs the target
// on every file of the seed corpus, then on mutations of them — bit flips, byte overwrites with
// boundary values, truncations, duplicated and deleted runs, and changed little-endian integers
// (zip's sizes and offsets) — from a seeded generator, for a bounded number of runs. An exception
// other than kiln::Error escapes the target and fails the run, naming the input's seed and file.
//   driver [--runs N] [--seed S] [--save DIR] CORPUS_FILE_OR_DIR...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

Bytes read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

// One random change; several are stacked per run.
void mutate(Bytes& b, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  if (b.empty()) {
    b.push_back(static_cast<uint8_t>(rng()));
    return;
  }
  static const uint32_t kBoundaries[] = {0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF};
  switch (rng() % 6) {
    case 0: b[pick(b.size())] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
    case 1: b[pick(b.size())] = static_cast<uint8_t>(kBoundaries[pick(std::size(kBoundaries))]); break;
    case 2: b.resize(pick(b.size())); break;
    case 3: {  // a little-endian 16/32-bit field set to a boundary value or nudged
      size_t width = rng() % 2 ? 4 : 2;
      if (b.size() < width) break;
      size_t at = pick(b.size() - width + 1);
      uint32_t v = 0;
      std::memcpy(&v, &b[at], width);
      v = rng() % 2 ? kBoundaries[pick(std::size(kBoundaries))] : v + static_cast<uint32_t>(pick(129)) - 64;
      std::memcpy(&b[at], &v, width);
      break;
    }
    case 4: {  // duplicate a run
      size_t at = pick(b.size()), n = std::min<size_t>(pick(64) + 1, b.size() - at);
      Bytes run(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size())), run.begin(), run.end());
      break;
    }
    default: {  // delete a run
      size_t at = pick(b.size()), n = std::min<size_t>(pick(64) + 1, b.size() - at);
      b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 1000;
  uint64_t seed = 1;
  std::string save;
  std::vector<fs::path> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::stol(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else if (a == "--save" && i + 1 < argc) {
      save = argv[++i];
    } else if (fs::is_directory(a)) {
      for (const auto& e : fs::recursive_directory_iterator(a)) {
        if (e.is_regular_file()) corpus.push_back(e.path());
      }
    } else {
      corpus.emplace_back(a);
    }
  }
  std::sort(corpus.begin(), corpus.end());
  if (corpus.empty()) {
    std::fprintf(stderr, "usage: driver [--runs N] [--seed S] [--save DIR] CORPUS_FILE_OR_DIR...\n");
    return 2;
  }
  std::vector<Bytes> seeds;
  for (const auto& p : corpus) seeds.push_back(read_file(p));
  auto run_one = [&](const Bytes& input, const std::string& what) {
    try {
      LLVMFuzzerTestOneInput(input.data(), input.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "FAIL %s: an exception other than kiln::Error escaped: %s\n", what.c_str(), e.what());
      if (!save.empty()) {
        fs::create_directories(save);
        std::ofstream(fs::path(save) / "crash.pt2", std::ios::binary)
            .write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size()));
      }
      std::exit(1);
    }
  };
  for (size_t i = 0; i < seeds.size(); ++i) run_one(seeds[i], corpus[i].string());
  std::mt19937_64 rng(seed);
  for (long r = 0; r < runs; ++r) {
    size_t from = static_cast<size_t>(rng() % seeds.size());
    Bytes input = seeds[from];
    int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) mutate(input, rng);
    run_one(input,
            "run " + std::to_string(r) + " (seed " + std::to_string(seed) + ", from " + corpus[from].string() + ")");
  }
  std::printf("%zu corpus files and %ld mutated inputs: no crash, no exception but kiln::Error\n", seeds.size(), runs);
  return 0;
}
