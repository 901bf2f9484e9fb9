// Reads the graph IR's text form (see printer.h) back into a Graph. Call targets are looked up in
// the op registry and constants are typed by the op's schema. get_attr tensors come from `attrs`
// by name; a missing one becomes a meta tensor of the declared type. Errors name the line and
// column of the first character that cannot be read.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "kiln/graph/graph.h"

namespace kiln::graph {

Graph parse(std::string_view text, const std::map<std::string, Tensor>& attrs = {});

}  // namespace kiln::graph
