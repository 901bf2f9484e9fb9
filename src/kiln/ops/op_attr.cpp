#include "kiln/ops/op_attr.h"

#include <algorithm>
#include <mutex>

#include "kiln/support/error.h"

namespace kiln {
namespace {

// Every live attribute, so names stay unique and an op's attributes can be listed.
struct AttrList {
  std::mutex mu;
  std::vector<const OpAttrBase*> attrs;
};

AttrList& attr_list() {
  static AttrList* list = new AttrList();  // never destroyed: attributes may outlive static destruction order
  return *list;
}

}  // namespace

OpAttrBase::OpAttrBase(std::string name) : name_(std::move(name)) {
  auto& list = attr_list();
  std::lock_guard lock(list.mu);
  for (const OpAttrBase* a : list.attrs) KILN_CHECK(a->name_ != name_, "op attribute '{}' is defined twice", name_);
  list.attrs.push_back(this);
}

OpAttrBase::~OpAttrBase() {
  auto& list = attr_list();
  std::lock_guard lock(list.mu);
  std::erase(list.attrs, this);
}

void OpAttrBase::claim(OpHandle op) {
  KILN_CHECK(op != nullptr, "op attribute '{}': set on a null op", name_);
  size_t i = op->index();
  if (slots_.size() <= i) slots_.resize(i + 1, -1);
  KILN_CHECK(slots_[i] < 0, "op {} already has attribute '{}' (an attribute is set once per op)", op->name(), name_);
  slots_[i] = count_++;
}

int64_t OpAttrBase::slot(OpHandle op) const {
  size_t i = op->index();
  return i < slots_.size() ? slots_[i] : -1;
}

bool OpAttrBase::has(OpHandle op) const {
  if (op == nullptr) return false;
  std::shared_lock lock(mu_);
  return slot(op) >= 0;
}

std::vector<OpHandle> OpAttrBase::missing(const std::vector<OpHandle>& ops) const {
  std::vector<OpHandle> out;
  for (OpHandle op : ops) {
    if (!has(op)) out.push_back(op);
  }
  return out;
}

std::vector<OpHandle> OpAttrBase::ops() const {
  std::vector<OpHandle> out;
  for (OpHandle op : Registry::global().ops()) {
    if (has(op)) out.push_back(op);
  }
  return out;
}

std::vector<std::string> op_attr_names(OpHandle op) {
  auto& list = attr_list();
  std::vector<std::string> names;
  {
    std::lock_guard lock(list.mu);
    for (const OpAttrBase* a : list.attrs) {
      if (a->has(op)) names.push_back(a->name());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kiln
