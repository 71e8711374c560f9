# Thin wrapper: CMake and Ninja do the work.
BUILD ?= build
JOBS  ?= $(shell nproc)

.PHONY: all deps build test demo format clean

all: build

deps:
	scripts/install-deps.sh

build: deps
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/bin/fwp-opt examples/attention.mlir

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
