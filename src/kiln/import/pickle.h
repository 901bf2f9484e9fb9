// A safe reader of Python pickles (protocols 2 to 5) into a small value tree, PickleValue: enough of
// the pickle virtual machine for what torch.save writes (state dicts, containers of tensors, example
// inputs). It never runs Python: a GLOBAL names a callable, and only a whitelist resolves — the VM's
// own few (collections.OrderedDict, _codecs.encode for protocol 2's bytes) plus whatever the caller's
// PickleHooks allow and then carry out. Any other global or opcode, a truncated stream, a stack
// underflow or a memo index never stored is a kiln::Error naming the opcode and the byte offset.
// torch_save.h builds PyTorch's conventions (storages, tensors) on top; docs/import.md has the subset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/ops/tensor.h"

namespace kiln {

// An object the value tree has no kind for, made by a PickleHooks call (a torch.device, a storage).
class PickleObject {
 public:
  virtual ~PickleObject() = default;
  // How it prints in errors and PickleValue::describe: "device(type='cpu')".
  virtual std::string describe() const = 0;
};

struct PickleItem;

// One Python value: None, bool, int (int64), float, str, bytes, tuple, list, dict (insertion
// order kept, any keys), a tensor, a global (a reference to a whitelisted module-level name such as
// torch.float32), or an object a hook made. Values are trees: shared references in the pickle are
// copied (tensors share their storage).
class PickleValue {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Tensor, Global, Object };

  PickleValue() = default;  // None
  static PickleValue boolean(bool v);
  static PickleValue integer(int64_t v);
  static PickleValue floating(double v);
  static PickleValue string(std::string v);
  static PickleValue bytes(std::string v);
  static PickleValue tuple(std::vector<PickleValue> items);
  static PickleValue list(std::vector<PickleValue> items);
  static PickleValue dict(std::vector<PickleItem> items);
  static PickleValue tensor(Tensor t);
  static PickleValue global(std::string module, std::string name);
  static PickleValue object(std::shared_ptr<const PickleObject> obj);

  Kind kind() const { return kind_; }
  bool is(Kind k) const { return kind_ == k; }
  bool is_none() const { return kind_ == Kind::None; }

  // Typed access; each throws kiln::Error (kind Type) naming the expected and the actual kind.
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;
  const std::string& as_string() const;
  const std::string& as_bytes() const;
  const std::vector<PickleValue>& as_tuple() const;
  const std::vector<PickleValue>& as_list() const;
  // A tuple's or a list's elements.
  const std::vector<PickleValue>& as_sequence() const;
  const std::vector<PickleItem>& as_dict() const;
  const Tensor& as_tensor() const;
  const std::string& global_module() const;
  const std::string& global_name() const;
  // "module.name" of a global.
  std::string global_qualname() const;
  const PickleObject& as_object() const;
  const std::shared_ptr<const PickleObject>& object_ptr() const;

  // The value of a dict's string key, or null when absent (a non-dict throws).
  const PickleValue* find(std::string_view key) const;
  // Mutable containers, for the VM that builds them.
  std::vector<PickleValue>& mutable_sequence();
  std::vector<PickleItem>& mutable_dict();

  // Python-like text, elided past `max_items` elements per container: for errors and debugging.
  std::string describe(size_t max_items = 8) const;

 private:
  Kind kind_ = Kind::None;
  int64_t int_ = 0;  // Bool, Int
  double float_ = 0;
  std::string str_;   // String, Bytes; Global's module
  std::string name_;  // Global's name
  std::vector<PickleValue> items_;
  std::vector<PickleItem> dict_;
  Tensor tensor_;
  std::shared_ptr<const PickleObject> object_;
};

struct PickleItem {
  PickleValue key;
  PickleValue value;
};

// The name of a kind: "None", "int", "tuple", "tensor", ...
std::string_view pickle_kind_name(PickleValue::Kind kind);

// What a caller adds to the VM. Errors a hook throws come back prefixed with the pickle's name, the
// byte offset and the opcode.
struct PickleHooks {
  // Whether GLOBAL module.name may resolve (beyond the VM's own). Unset: none may.
  std::function<bool(std::string_view module, std::string_view name)> allow_global;
  // BINPERSID: the object a persistent id stands for. Unset: BINPERSID is an error.
  std::function<PickleValue(const PickleValue& pid)> persistent_load;
  // REDUCE / NEWOBJ of a global that allow_global accepted: the result of calling it with `args`.
  std::function<PickleValue(const PickleValue& callable, std::vector<PickleValue> args)> call;
};

// Runs the pickle in `data` and returns the value STOP leaves. `name` names the stream in errors
// ("archive/data.pkl"). Throws kiln::Error for anything outside the subset or malformed.
PickleValue unpickle(std::span<const std::byte> data, const PickleHooks& hooks = {}, std::string_view name = "pickle");

}  // namespace kiln
