# The README's commands. Each one installs what is missing, then builds.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all setup setup-python build run test test-asan test-gpu bench-gpu fuzz-compiled bench format format-check fresh-machine clean

all: build

setup:
	@scripts/setup.sh

# .venv with pinned PyTorch (CPU) and NumPy: the reference some tests compare against.
setup-python:
	@scripts/setup.sh python

$(BUILD)/build.ninja: CMakeLists.txt | setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null

build: setup $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@$(BUILD)/kiln demo
	@$(BUILD)/kiln explain mlp

# Configured again after setup-python: the Python package (python/) is built once .venv has nanobind.
test: setup-python
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: setup-python
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

# On a machine with an NVIDIA GPU: the CUDA tests, where a missing GPU fails (docs/devices.md). The
# GPU machine of the device tool has no package manager: there, unpack scripts/gpu_bundle.sh's
# archive and run scripts/test_gpu.sh on it instead.
test-gpu: build
	@scripts/test_gpu.sh .

# On a machine with an NVIDIA GPU and PyTorch: the GPU suite (bench/run_gpu.py), kiln compiled vs
# PyTorch eager and torch.compile in one run, with the device's copy bandwidth.
GPU_PYTHON ?= python3
bench-gpu: build
	@$(GPU_PYTHON) bench/run_gpu.py --kiln-bench $(BUILD)/bench/kiln_gpu_bench --out bench/results/gpu.md

# Random programs compiled vs eager/float64/PyTorch for MINUTES; new failures go to tests/differential/corpus.
SEED    ?= 1
MINUTES ?= 10
# DEVICE=cuda compiles for the GPU (on a machine with one; eager and float64 stay on the CPU).
DEVICE  ?= cpu
fuzz-compiled: build
	@KILN_CACHE_DIR=$(abspath $(BUILD))/kiln-cache $(BUILD)/tests/kiln_differential_test --fuzz --seed $(SEED) \
	  --minutes $(MINUTES) --device $(DEVICE)

# The compiled suite runs against the pinned PyTorch of .venv (bench/README.md); it takes long on a
# small host. BENCH_ARGS adds flags to bench/run_compiled.py, e.g. BENCH_ARGS="--scales 8 --processes 1".
BENCH_ARGS ?=
# MODELS_ARGS adds flags to bench/run_models.py (the exported models), e.g. MODELS_ARGS="--processes 1 --only gpt2".
# BACKEND_ARGS adds flags to bench/run_backend.py (torch.compile(backend="kiln") vs Inductor), e.g. "--models mlp,gpt2".
BACKEND_ARGS ?=
MODELS_ARGS ?=
bench: build setup-python
	@/usr/bin/python3 bench/run_eager.py --build $(BUILD) --python .venv/bin/python --output bench/results/eager_cpu.md
	@/usr/bin/python3 bench/run_compiled.py --build $(BUILD) --python .venv/bin/python --out bench/results/compiled_cpu.md $(BENCH_ARGS)
	@cmake --build $(BUILD) --target kiln_models
	@/usr/bin/python3 bench/run_models.py --kiln $(BUILD)/kiln --python .venv/bin/python \
	  --models tests/models/fixtures $(BUILD)/models --out bench/results/models_cpu.md $(MODELS_ARGS)
	@PYTHONPATH=$(abspath $(BUILD))/python .venv/bin/python bench/run_backend.py --python .venv/bin/python \
	  --out bench/results/backend_cpu.md $(BACKEND_ARGS)

format:
	@scripts/setup.sh format
	@scripts/format_check.sh -i

format-check:
	@scripts/setup.sh format
	@scripts/format_check.sh

# The two commands above on a fresh Debian 12 (debootstrap + chroot, as root): docs/setup.md.
fresh-machine:
	@scripts/fresh_machine.sh

clean:
	@rm -rf $(BUILD) $(ASAN_BUILD)
