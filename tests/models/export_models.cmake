# Exports the model fixtures too large to commit (resnet18, mobilenet_v3_small, gpt2, bert, vit) into
# OUT with PYTHON (the venv's PyTorch and transformers), running export_models.py --large, unless OUT
# already holds an export made by the same script with the same torch and transformers (a stamp
# beside it). The small fixtures are committed in tests/models/fixtures and are not written here.
# Without the venv it exports nothing and says so; tests that need these fixtures must then fail,
# naming the missing folder (tests/models/README.md).
#   cmake -DPYTHON=.venv/bin/python -DSCRIPT=tests/models/export_models.py -DOUT=build/models
#         -P tests/models/export_models.cmake
if(NOT EXISTS "${PYTHON}")
  message(STATUS "no Python with PyTorch at ${PYTHON}: the large model fixtures are not exported "
                 "(scripts/setup_python.sh creates it)")
  return()
endif()
file(SHA256 "${SCRIPT}" script_hash)
execute_process(COMMAND "${PYTHON}" -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
                OUTPUT_VARIABLE versions OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PYTHON} cannot import torch and transformers: run scripts/setup_python.sh")
endif()
execute_process(COMMAND "${PYTHON}" "${SCRIPT}" --large --list OUTPUT_VARIABLE listing
                OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REGEX MATCHALL "[a-z0-9_]+ build tree" models "${listing}")
list(TRANSFORM models REPLACE " build tree" "")
set(stamp "${script_hash} torch/transformers ${versions}")
set(current TRUE)
if(EXISTS "${OUT}/stamp.txt")
  file(READ "${OUT}/stamp.txt" old)
  if(NOT old STREQUAL stamp)
    set(current FALSE)
  endif()
else()
  set(current FALSE)
endif()
foreach(model IN LISTS models)
  if(NOT EXISTS "${OUT}/${model}.pt2" OR NOT EXISTS "${OUT}/${model}/manifest.json")
    set(current FALSE)
  endif()
endforeach()
if(current)
  message(STATUS "model fixtures in ${OUT} are current (${models})")
  return()
endif()
file(REMOVE "${OUT}/stamp.txt")
execute_process(COMMAND "${PYTHON}" "${SCRIPT}" --large --out "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "export_models.py failed (${rc})")
endif()
file(WRITE "${OUT}/stamp.txt" "${stamp}")
