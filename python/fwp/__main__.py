"""`python -m fwp`: the version, the library, the backends and the cache.

    $ python -m fwp
    fwp 0.1.0
    library: /.../libfwp.so (compiles kernels)
    backends: cpu; cuda: no (torch.cuda.is_available() is False)
    cache: /root/.cache/fwp
"""

import sys

from . import __version__
from . import _capi


def _cuda_backend():
    try:
        import torch
    except ImportError:
        return "cuda: no (PyTorch is not installed)"
    if not torch.cuda.is_available():
        return "cuda: no (torch.cuda.is_available() is False)"
    return f"cuda ({torch.cuda.device_count()} devices)"


def main():
    print(f"fwp {__version__}")
    try:
        compiles = _capi.compiler_available()
    except _capi.LibraryNotFound as error:
        print(f"library: none\n{error}")
        return 1
    what = ("compiles kernels" if compiles
            else "no compiler: CUDA kernels from the disk cache only")
    print(f"library: {_capi.library_path()} ({what})")
    for skipped in _capi.passed_over():
        print(f"not loaded: {skipped}")
    if not compiles:
        print("cannot: compile kernels, or run on the CPU (libfwp.so and "
              "the MLIR/LLVM 22 libraries it needs: scripts/install-deps.sh)")
    backends = (["cpu"] if compiles else []) + [_cuda_backend()]
    print("backends: " + "; ".join(backends))
    print(f"cache: {_capi.cache_directory() or 'off (FWP_CACHE=off)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
