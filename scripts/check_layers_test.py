#!/usr/bin/env python3
"""Tests scripts/check_layers.py on small fake source trees (CTest: kiln_layer_check_test)."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")


def run_check(files):
    """Writes `files` ({relative path: text}) into a fresh tree and runs the check on it."""
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        proc = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
        return proc.returncode, proc.stdout + proc.stderr


CLEAN = {
    "src/kiln/support/error.h": "#pragma once\n",
    "src/kiln/core/tensor_base.h": '#pragma once\n#include "kiln/support/error.h"\n',
    "src/kiln/ops/api.h": '#pragma once\n#include <vector>\n#include "kiln/core/tensor_base.h"\n#include "kiln/ops/x.h"\n',
    "src/kiln/api/compile.cpp": '#include "kiln/ops/api.h"\n#include <kiln/support/error.h>\n',
}


class CheckLayersTest(unittest.TestCase):
    def assert_fails(self, files, *needles):
        """The check fails on `files`, its output naming every needle."""
        rc, out = run_check(files)
        self.assertEqual(rc, 1, out)
        for needle in needles:
            self.assertIn(needle, out)
        return out

    def test_clean_tree_passes(self):
        rc, out = run_check(CLEAN)
        self.assertEqual(rc, 0, out)

    def test_upward_include_fails_naming_file_line_and_include(self):
        files = dict(CLEAN)
        files["src/kiln/core/scalar.cpp"] = '// a comment\n#include "kiln/core/tensor_base.h"\n#include "kiln/ops/api.h"\n'
        out = self.assert_fails(files, 'src/kiln/core/scalar.cpp:3: #include "kiln/ops/api.h"',
                                "layer core/ includes ops/")
        self.assertEqual(out.count("comes after it"), 1, out)

    def test_angle_bracket_include_is_checked(self):
        files = dict(CLEAN)
        files["src/kiln/support/log.h"] = "#include <kiln/api/compile.h>\n"
        self.assert_fails(files, "src/kiln/support/log.h:1:")

    def test_known_exception_covers_only_its_file(self):
        files = dict(CLEAN)
        files["src/kiln/runtime/executable_test.cpp"] = '#include "kiln/api/compile.h"\n'
        self.assertEqual(run_check(files)[0], 0)
        files["src/kiln/runtime/other_test.cpp"] = '#include "kiln/api/compile.h"\n'
        self.assert_fails(files, "src/kiln/runtime/other_test.cpp:1:")

    def test_stale_exception_is_noted_without_failing(self):
        rc, out = run_check(CLEAN)
        self.assertEqual(rc, 0, out)
        self.assertIn("note: src/kiln/runtime/executable_test.cpp no longer includes api/", out)

    def test_folder_that_is_not_a_layer_fails(self):
        files = dict(CLEAN)
        files["src/kiln/misc/util.h"] = "#pragma once\n"
        self.assert_fails(files, "src/kiln/misc/")

    def test_include_of_unknown_folder_fails(self):
        files = dict(CLEAN)
        files["src/kiln/ops/y.cpp"] = '#include "kiln/misc/util.h"\n'
        self.assert_fails(files, "src/kiln/ops/y.cpp:1:")

    def test_cmake_layer_order_must_match(self):
        files = dict(CLEAN)
        files["src/kiln/CMakeLists.txt"] = "set(KILN_LAYERS support core ops api)\n"
        self.assertEqual(run_check(files)[0], 0)
        files["src/kiln/CMakeLists.txt"] = "set(KILN_LAYERS support ops core api)\n"
        self.assert_fails(files, "KILN_LAYERS")


if __name__ == "__main__":
    unittest.main()
