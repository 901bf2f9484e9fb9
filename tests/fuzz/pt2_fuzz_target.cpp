// The .pt2 loader's fuzz target: any bytes, read as an archive, give a loaded model or a kiln::Error
// — never a crash, a hang, an out-of-bounds read or another exception. Built two ways: with
// libFuzzer (clang -fsanitize=fuzzer,address: `make fuzz-loader`, docs/import.md), and with
// tests/fuzz/driver.cpp, the bounded run `make test` does.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kiln/api/model.h"
#include "kiln/import/pt2.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data),
                               reinterpret_cast<const std::byte*>(data) + size);
  try {
    kiln::import::Pt2Archive archive = kiln::import::load_pt2_bytes(std::move(bytes), "<fuzz>");
    kiln::Model model(std::move(archive.program), std::move(archive.state), "<fuzz>");
    (void)model.input_names();
  } catch (const kiln::Error&) {
    // The expected answer to malformed input.
  }
  return 0;
}
