// Typed attributes of ops: what a layer knows about an op beyond its declaration (how the compiler
// lowers it, how generated C++ spells it, its view geometry, later its derivative), kept as data
// attached to the op and looked up through its handle, never by switching on its name (TVM's
// `Op::set_attr<T>`). An attribute is an OpAttr<T> object with a unique name, holding at most one
// value per op, set once. The layer that owns an attribute defines it and sets its values from a
// static OpAttrRegistrar at start-up (as kernels attach through KernelRegistrar), so `ops/` knows
// nothing of the layers above it. Values are set during registration and read concurrently after.
#pragma once

#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln {

// Runs `fn` on the global registry once it exists: where a layer sets the values of its attributes.
// `fn` may run while Registry::global() is being built: it looks ops up through its argument
// (r.get("prims::add")), never through Registry::global() or a generated handle.
using OpAttrRegistrar = KernelRegistrar;

// What every attribute has, whatever its value type: a name, and which ops have a value.
class OpAttrBase {
 public:
  OpAttrBase(const OpAttrBase&) = delete;
  OpAttrBase& operator=(const OpAttrBase&) = delete;

  const std::string& name() const { return name_; }
  // True when `op` has a value.
  bool has(OpHandle op) const;
  // The ops of `ops` without a value, in the order given (what a completeness test reports).
  std::vector<OpHandle> missing(const std::vector<OpHandle>& ops) const;
  // The ops with a value, in declaration order.
  std::vector<OpHandle> ops() const;

 protected:
  // Registers the attribute's name; throws kiln::Error when another attribute has it.
  explicit OpAttrBase(std::string name);
  ~OpAttrBase();
  // Reserves `op`'s slot; throws kiln::Error naming the op and the attribute when it is taken.
  // Called with mu_ held exclusively.
  void claim(OpHandle op);
  // The slot of `op` (an index into the subclass's values), or -1. Called with mu_ held.
  int64_t slot(OpHandle op) const;

  mutable std::shared_mutex mu_;

 private:
  std::string name_;
  std::vector<int64_t> slots_;  // by OpEntry::index(): -1 or the value's position
  int64_t count_ = 0;
};

template <class T>
class OpAttr : public OpAttrBase {
 public:
  explicit OpAttr(std::string name) : OpAttrBase(std::move(name)) {}

  // Gives `op` its value; throws kiln::Error naming the op and the attribute when it has one.
  const T& set(OpHandle op, T value) {
    std::unique_lock lock(mu_);
    claim(op);
    return *values_.emplace_back(std::make_unique<T>(std::move(value)));
  }

  // The value of `op`, or nullptr when it has none. The value lives as long as the attribute.
  const T* get(OpHandle op) const {
    if (op == nullptr) return nullptr;
    std::shared_lock lock(mu_);
    int64_t s = slot(op);
    return s < 0 ? nullptr : values_[static_cast<size_t>(s)].get();
  }

 private:
  std::vector<std::unique_ptr<T>> values_;  // in the order set; slots index them
};

// The names of the attributes `op` has a value of, sorted (for `kiln ops` and error messages).
std::vector<std::string> op_attr_names(OpHandle op);

}  // namespace kiln
