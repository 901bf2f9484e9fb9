# Runs record_opinfo.py into OUT with PYTHON, unless OUT already holds a recording made by the same
# script with the same PyTorch (a stamp beside it). Without the venv it records nothing; the replay
# test then skips, saying why.
if(NOT EXISTS "${PYTHON}")
  message(STATUS "no Python with PyTorch at ${PYTHON}: nothing recorded")
  return()
endif()
file(SHA256 "${SCRIPT}" script_hash)
execute_process(COMMAND "${PYTHON}" -c "import torch; print(torch.__version__)" OUTPUT_VARIABLE torch_version
                OUTPUT_STRIP_TRAILING_WHITESPACE)
set(stamp "${script_hash} torch ${torch_version}")
if(EXISTS "${OUT}/stamp.txt")
  file(READ "${OUT}/stamp.txt" old)
  if(old STREQUAL stamp AND EXISTS "${OUT}/calls.txt")
    message(STATUS "recording in ${OUT} is current")
    return()
  endif()
endif()
execute_process(COMMAND "${PYTHON}" "${SCRIPT}" --out "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "record_opinfo.py failed (${rc})")
endif()
file(WRITE "${OUT}/stamp.txt" "${stamp}")
