# Thin wrapper: CMake and Ninja do the work.
BUILD ?= build
JOBS  ?= $(shell nproc)
PTXAS ?= $(shell command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null)
PTXAS_CHECK = $(if $(PTXAS),--ptxas $(PTXAS) --arch sm_90)

.PHONY: all deps build test demo bench format clean

all: build

deps:
	scripts/install-deps.sh

build: deps
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

test: build
	scripts/run-tests.sh $(BUILD) $(JOBS)

# The main job: compile the whole module to PTX (and check it with ptxas
# when it is installed), then run it on random inputs on the best backend.
demo: build
	$(BUILD)/bin/fwp-opt examples/attention.mlir -fwp-to-ptx > $(BUILD)/attention.ptx.mlir
	scripts/extract-ptx.py $(BUILD)/attention.ptx.mlir $(BUILD)/attention-ptx --summary $(PTXAS_CHECK)
	$(BUILD)/bin/fwp-demo

bench: build
	$(BUILD)/bin/fwp-bench --csv $(BUILD)/bench.csv

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
