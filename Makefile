# Thin wrapper: CMake and Ninja do the work.
BUILD ?= build
JOBS  ?= $(shell nproc)
PTXAS ?= $(shell command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null)
PTXAS_CHECK = $(if $(PTXAS),--ptxas $(PTXAS) --arch sm_90)

.PHONY: all deps python-env build test fla-tests sanitize demo bench bench-cpu bench-cpu-training gpu-bundle gpu-model format clean \
        equivalence capacity char-lm barrier-mutation

all: build

deps:
	scripts/install-deps.sh

# fla's own delta-rule tests (tests/ops/test_delta.py, unchanged) against
# fwp.fla on the CPU, fla's naive recurrence as the reference: needs a
# checkout of fla at v0.5.2 in FLA_SOURCE (default .fla; test/fla/run.sh
# says how), which CI machines cannot reach, so it is not part of `make test`.
fla-tests: build python-env
	test/fla/run.sh

# The Python the tests, benchmarks and examples run on: PyTorch 2.x and the
# rest of python/requirements-test.txt, pinned, in a virtual environment
# outside the clone that later runs reuse (scripts/python-env.sh).
PYTHON = $(shell scripts/python-env.sh --path)
python-env: deps
	scripts/python-env.sh > /dev/null

# CMAKE_FLAGS: more options for a build folder of its own, e.g.
# `make gpu-bundle BUILD=build-stages CMAKE_FLAGS=-DFWP_GPU_STAGES_BY_DEFAULT=ON`
# for a bundle of the GPU stages' kernels (fwp/GpuStages.h).
CMAKE_FLAGS ?=
build: deps
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

test: build python-env
	FWP_PYTHON=$(PYTHON) scripts/run-tests.sh $(BUILD) $(JOBS)

# The whole project with AddressSanitizer and UBSan (CMake's FWP_SANITIZE,
# -O1 -g) in its own folder, then every test there. The first finding stops
# the program with a report (UBSan too: -fno-sanitize-recover=undefined);
# the options also cover the test discovery that runs during the build.
# LeakSanitizer checks every test that does not run CPU kernels: neither
# fwp nor libMLIR/LLVM report leaks there. Its tracer cannot stop a process
# that has loaded libomp (it crashes at exit, now and then even with one
# OpenMP thread), so the tests that run CPU kernels (SANITIZE_OPENMP) run
# second, on two OpenMP threads, with ASan and UBSan but no leak checks.
# allow_user_poisoning=0: LLVM's allocators poison a new slab when inlined
# into fwp's instrumented code and unpoison what they hand out there, but
# libMLIR (not instrumented) hands out the same slabs unpoisoned: a storage
# that fwp's dialect uniques in a pass's worker thread made libMLIR's next
# write to that slab a false use-after-poison.
SANITIZE_BUILD ?= build-sanitize
SANITIZE_ASAN = halt_on_error=1:detect_stack_use_after_return=1:allow_user_poisoning=0
SANITIZE_ENV = ASAN_OPTIONS=$(SANITIZE_ASAN) \
               UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
SANITIZE_OPENMP = cpu/|CpuScanGrad|CApi|FastWeights|GpuBundle|RuntimeOnly|FwpRun|DiskCache|lit/|python/|NonFinite|install/
# A disk cache of its own, emptied first: the sanitized compiler has the
# same build id as the plain one, and kernels the plain build cached would
# otherwise be loaded instead of compiled under the sanitizers.
SANITIZE_CACHE = $(abspath $(SANITIZE_BUILD))/kernel-cache
sanitize: deps python-env
	cmake -G Ninja -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFWP_SANITIZE=ON
	$(SANITIZE_ENV) cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	rm -rf $(SANITIZE_CACHE)
	FWP_CACHE_DIR=$(SANITIZE_CACHE) $(SANITIZE_ENV) \
	  scripts/run-tests.sh $(SANITIZE_BUILD) $(JOBS) -E "$(SANITIZE_OPENMP)"
	FWP_CACHE_DIR=$(SANITIZE_CACHE) \
	  ASAN_OPTIONS=$(SANITIZE_ASAN):detect_leaks=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 OMP_NUM_THREADS=2 \
	  scripts/run-tests.sh $(SANITIZE_BUILD) $(JOBS) -R "$(SANITIZE_OPENMP)"

# Each bar.sync of the scan's kernels removed in turn, on the PTX emulator:
# a removal nobody notices is a redundant barrier (or a gap in the checks).
barrier-mutation: build
	LD_LIBRARY_PATH=$(abspath $(BUILD))/lib/emulated-cuda $(BUILD)/bin/BarrierMutationTest

# The main job: compile the whole module to PTX (and check it with ptxas
# when it is installed), then run it on random inputs on the best backend.
demo: build
	$(BUILD)/bin/fwp-opt examples/attention.mlir -fwp-to-ptx > $(BUILD)/attention.ptx.mlir
	scripts/extract-ptx.py $(BUILD)/attention.ptx.mlir $(BUILD)/attention-ptx --summary $(PTXAS_CHECK)
	$(BUILD)/bin/fwp-demo

bench: build
	$(BUILD)/bin/fwp-bench --csv $(BUILD)/bench.csv

# fwp's CPU forward against the chunked PyTorch forward, same run (PyTorch
# from python-env, on MKL).
bench-cpu: build python-env
	$(PYTHON) bench/cpu_vs_pytorch.py --fwp-bench $(BUILD)/bin/fwp-bench --markdown $(BUILD)/cpu-vs-pytorch.md

# The same for a training step: forward, then backward (PyTorch's autograd).
bench-cpu-training: build python-env
	$(PYTHON) bench/cpu_vs_pytorch.py --training --fwp-bench $(BUILD)/bin/fwp-bench --markdown $(BUILD)/cpu-vs-pytorch-training.md

# The one-command GPU check: every CUDA test case and benchmark shape
# compiled here, with the float64 reference's answers and a runtime-only
# runner, in one folder to copy to a machine with a GPU and run there with
# `bash $(BUILD)/gpu-bundle/run.sh` (docs/compiled-modules.md).
GPU_BUNDLE ?= $(BUILD)/gpu-bundle
gpu-bundle: build python-env
	$(BUILD)/bin/fwp-gpu-bundle --out $(GPU_BUNDLE) --runner $(BUILD)/bin/fwp-gpu-check --conformance $(BUILD)/bin/fwp-ptx-conformance --script test/gpu-bundle/run.sh
	@# The Python part, laid out as in the repository: the package on
	@# libfwp_runtime.so, its CUDA tests, the fla benchmark, and the
	@# kernels they run, compiled here into the bundle's disk cache.
	mkdir -p $(GPU_BUNDLE)/py/build/lib $(GPU_BUNDLE)/py/test/python $(GPU_BUNDLE)/py/examples $(GPU_BUNDLE)/py/bench
	cp -r python $(GPU_BUNDLE)/py/
	cp $(BUILD)/lib/libfwp_runtime.so $(GPU_BUNDLE)/py/build/lib/
	cp test/python/test_cuda.py test/python/test_delta_rule.py test/python/test_package.py $(GPU_BUNDLE)/py/test/python/
	cp examples/seeds_pytorch.py $(GPU_BUNDLE)/py/examples/
	cp bench/gpu_vs_fla.py $(GPU_BUNDLE)/py/bench/
	FWP_CACHE_DIR=$(GPU_BUNDLE)/py/kernel-cache FWP_LIBRARY=$(abspath $(BUILD))/lib/libfwp.so \
	  $(PYTHON) test/gpu-bundle/prepare_kernels.py
	@echo "$(GPU_BUNDLE): $$(du -sh $(GPU_BUNDLE) | cut -f1), $$(grep -vc '^#' $(GPU_BUNDLE)/checks.txt) checks, $$(grep -vc '^#' $(GPU_BUNDLE)/bench.txt) benchmark shapes"

# The GPU model (issue 29, bench/gpu_model.py): fwp's bare scan and fla's
# chunk_delta_rule forward and backward on the PTX emulator, fla checked
# against float64 in its run, taken to B 4, T 4096, H 16 and modelled on
# an A100 and an H100; the last lines say `model sm_80: fwp fwd ...`. Needs
# fla in FLA_SOURCE (default .fla, as fla-tests): not part of `make test`.
FLA_SOURCE ?= .fla
gpu-model: build python-env
	bench/gpu-model.sh $(BUILD) $(BUILD)/gpu-model $(FLA_SOURCE) $(PYTHON)

# The seeds' experiments on fwp (examples/*/; README).
PLOTS ?= $(BUILD)/capacity
equivalence: build python-env
	$(PYTHON) examples/equivalence/equivalence.py

capacity: build python-env
	$(PYTHON) examples/capacity/capacity.py --plots $(PLOTS)

# ARGS: e.g. ARGS="--text input.txt --steps 2000 --resume"
char-lm: build python-env
	$(PYTHON) examples/char-lm/char_lm.py --out $(BUILD)/char-lm $(ARGS)

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
