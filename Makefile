# The README's commands. Each one installs what is missing, then builds.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all setup build run test test-asan fuzz-compiled bench format clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja: CMakeLists.txt | setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null

build: setup $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@$(BUILD)/kiln demo
	@$(BUILD)/kiln explain mlp

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: setup
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

# Random programs compiled vs eager/float64/PyTorch for MINUTES; new failures go to tests/differential/corpus.
SEED    ?= 1
MINUTES ?= 10
fuzz-compiled: build
	@KILN_CACHE_DIR=$(abspath $(BUILD))/kiln-cache $(BUILD)/tests/kiln_differential_test --fuzz --seed $(SEED) --minutes $(MINUTES)

bench: build
	@scripts/setup.sh bench
	@/usr/bin/python3 bench/run_eager.py --build $(BUILD) --output bench/results/eager_cpu.md
	@/usr/bin/python3 bench/run_compiled.py --build $(BUILD) --out bench/results/compiled_cpu.md

format:
	@git ls-files '*.h' '*.cpp' | xargs clang-format -i

clean:
	@rm -rf $(BUILD) $(ASAN_BUILD)
