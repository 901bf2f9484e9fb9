// Expecting a kiln::Error whose message holds given fragments (an op's name, an argument, sizes):
// what every test of bad input checks.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "kiln/support/error.h"

namespace kiln::testing {

// Expects `call` to throw kiln::Error whose message contains every string in `fragments`.
inline void expect_kiln_error(const std::function<void()>& call, std::initializer_list<std::string> fragments) {
  try {
    call();
    ADD_FAILURE() << "expected a kiln::Error saying '" << (fragments.size() ? *fragments.begin() : "") << "'";
  } catch (const ::kiln::Error& e) {
    for (const std::string& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "message lacks '" << f << "': " << e.what();
    }
  }
}

}  // namespace kiln::testing

// The same for a statement.
#define EXPECT_KILN_ERROR(stmt, ...) ::kiln::testing::expect_kiln_error([&] { stmt; }, {__VA_ARGS__})
