"""libfwp_runtime.so: the package on a machine without fwp's compiler. It
runs CUDA kernels that libfwp.so compiled into the disk cache, and says
what is missing otherwise. Each case runs in a fresh process (the library
loads once per process)."""

import os
import subprocess
import sys

import pytest

REPOSITORY = os.path.join(os.path.dirname(__file__), "..", "..")
RUNTIME = os.path.join(REPOSITORY, "build", "lib", "libfwp_runtime.so")
COMPILER = os.path.join(REPOSITORY, "build", "lib", "libfwp.so")

pytestmark = pytest.mark.skipif(
    not (os.path.exists(RUNTIME) and os.path.exists(COMPILER)),
    reason="libfwp.so and libfwp_runtime.so are not built (make build)")

PREPARE = ("import fwp, torch\n"
           "fwp.prepare_cuda_scan(torch.bfloat16, 16, 16, dpfp=fwp.DPFP(1))\n"
           "print('compiler', fwp.compiler_available())\n")


def run(library, script, cache):
    env = dict(os.environ, FWP_LIBRARY=library, FWP_CACHE_DIR=str(cache))
    env.pop("LD_PRELOAD", None)  # the sanitizers' runtimes are for libfwp.so
    return subprocess.run([sys.executable, "-c", script], env=env,
                          capture_output=True, text=True)


def test_loads_cuda_kernels_compiled_elsewhere(tmp_path):
    missing = run(RUNTIME, PREPARE, tmp_path)
    assert missing.returncode != 0
    assert "no compiled kernel for 'scan cuda bf16 delta d_in=16" in \
        missing.stderr
    assert "has no compiler" in missing.stderr

    compiled = run(COMPILER, PREPARE, tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    assert "compiler True" in compiled.stdout

    # Both entry points are now in the cache: the runtime loads them.
    loaded = run(RUNTIME, PREPARE, tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert "compiler False" in loaded.stdout


def test_cpu_tensors_need_the_compiler(tmp_path):
    script = ("import fwp, torch\n"
              "z = torch.zeros(1, 2, 1, 4)\n"
              "fwp.delta_rule(z, z, z, torch.zeros(1, 2, 1))\n")
    result = run(RUNTIME, script, tmp_path)
    assert result.returncode != 0
    assert "runs CUDA kernels only; use libfwp.so for the CPU" in \
        result.stderr
