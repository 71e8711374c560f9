"""ctypes binding of fwp's C ABI (include/fwp/CApi.h), loaded once.

The library is looked for, in order: at $FWP_LIBRARY; inside the package
(fwp/lib, where `pip install` puts it); in the build tree this package sits
in (build/lib of the repository); on the system's library path; each place
libfwp.so first, then libfwp_runtime.so. libfwp.so holds the
compiler as well as the runtime, so it needs the MLIR and LLVM 22 shared
libraries (scripts/install-deps.sh installs them); libfwp_runtime.so needs
neither and runs CUDA kernels found in the disk cache only (compiled where
fwp is built: see fwp.prepare_cuda).

Calls on CUDA tensors go to the *_cuda functions with an fwp_cuda_call:
PyTorch's current stream, and scratch from PyTorch's caching allocator on
it, so that fwp's work is ordered with the caller's and its memory shows in
torch.cuda.max_memory_allocated().
"""

import ctypes
import ctypes.util
import os
import threading

EXPECTED_VERSION = 5

_lock = threading.Lock()
_library = None
_library_path = None
_passed_over = []  # (path, why) of the candidates tried before the loaded one


class LibraryNotFound(ImportError):
    """libfwp.so, or a library it needs, could not be loaded."""


def _candidates():
    explicit = os.environ.get("FWP_LIBRARY")
    if explicit:
        return [explicit]
    here = os.path.dirname(os.path.abspath(__file__))
    repository = os.path.dirname(os.path.dirname(here))
    paths = [os.path.join(directory, name)
             for directory in (os.path.join(here, "lib"),
                               os.path.join(repository, "build", "lib"))
             for name in ("libfwp.so", "libfwp_runtime.so")]
    for name in ("fwp", "fwp_runtime"):
        found = ctypes.util.find_library(name)
        if found:
            paths.append(found)
    return paths


class CudaCall(ctypes.Structure):
    """fwp_cuda_call: a stream and a stream-ordered allocator."""


_ALLOC = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64)
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64)
CudaCall._fields_ = [("stream", ctypes.c_void_p), ("alloc", _ALLOC),
                     ("release", _RELEASE), ("user", ctypes.c_void_p),
                     ("device", ctypes.c_int64)]


def _declare(lib):
    p, i64, cstr = ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p
    lib.fwp_capi_version.restype = ctypes.c_int
    lib.fwp_capi_version.argtypes = []
    lib.fwp_last_error.restype = cstr
    lib.fwp_last_error.argtypes = []
    lib.fwp_compiler_available.restype = ctypes.c_int
    lib.fwp_compiler_available.argtypes = []
    lib.fwp_cache_directory.restype = ctypes.c_char_p
    lib.fwp_cache_directory.argtypes = []
    call = ctypes.POINTER(CudaCall)
    lib.fwp_attention_create.restype = p
    lib.fwp_attention_create.argtypes = [cstr, cstr, cstr, i64, i64, i64,
                                         ctypes.c_double, i64]
    lib.fwp_attention_destroy.restype = None
    lib.fwp_attention_destroy.argtypes = [p]
    lib.fwp_attention_describe.restype = cstr
    lib.fwp_attention_describe.argtypes = [p]
    lib.fwp_attention_forward.restype = ctypes.c_int
    lib.fwp_attention_forward.argtypes = [p, i64, i64] + [p] * 8
    lib.fwp_attention_backward.restype = ctypes.c_int
    lib.fwp_attention_backward.argtypes = [p, i64, i64] + [p] * 15
    lib.fwp_attention_prepare.restype = ctypes.c_int
    lib.fwp_attention_prepare.argtypes = [p]
    lib.fwp_attention_forward_cuda.restype = ctypes.c_int
    lib.fwp_attention_forward_cuda.argtypes = [p, call, i64, i64] + [p] * 8
    lib.fwp_attention_backward_cuda.restype = ctypes.c_int
    lib.fwp_attention_backward_cuda.argtypes = [p, call, i64, i64] + [p] * 15
    lib.fwp_scan_create.restype = p
    lib.fwp_scan_create.argtypes = [cstr, cstr, cstr, cstr, i64, i64, i64,
                                    ctypes.c_double, i64]
    lib.fwp_scan_prepare.restype = ctypes.c_int
    lib.fwp_scan_prepare.argtypes = [p]
    lib.fwp_scan_forward_cuda.restype = ctypes.c_int
    lib.fwp_scan_forward_cuda.argtypes = [p, call, i64, i64, i64] + [p] * 7
    lib.fwp_scan_backward_cuda.restype = ctypes.c_int
    lib.fwp_scan_backward_cuda.argtypes = [p, call, i64, i64, i64] + [p] * 12
    lib.fwp_scan_destroy.restype = None
    lib.fwp_scan_destroy.argtypes = [p]
    lib.fwp_scan_describe.restype = cstr
    lib.fwp_scan_describe.argtypes = [p]
    lib.fwp_scan_forward.restype = ctypes.c_int
    lib.fwp_scan_forward.argtypes = [p, i64, i64, i64] + [p] * 7
    lib.fwp_scan_backward.restype = ctypes.c_int
    lib.fwp_scan_backward.argtypes = [p, i64, i64, i64] + [p] * 12


def library():
    """The loaded libfwp.so; raises LibraryNotFound saying what is missing."""
    global _library, _library_path
    with _lock:
        if _library is not None:
            return _library
        tried = []
        for path in _candidates():
            if os.path.sep in path and not os.path.exists(path):
                tried.append(f"{path} (no such file)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as error:
                tried.append(f"{path} ({error})")
                continue
            _declare(lib)
            version = lib.fwp_capi_version()
            if version != EXPECTED_VERSION:
                tried.append(f"{path} (C ABI version {version}, this package "
                             f"needs {EXPECTED_VERSION})")
                continue
            _library = lib
            _library_path = (os.path.abspath(path) if os.path.sep in path
                             else path)
            _passed_over[:] = [t for t in tried if "(no such file)" not in t]
            return lib
        raise LibraryNotFound(
            "fwp: cannot load libfwp.so, the compiler and runtime this "
            "package calls; tried: " + "; ".join(tried) + ". Build it with "
            "`make build` in the fwp repository (it needs the MLIR/LLVM 22 "
            "libraries that scripts/install-deps.sh installs), or set "
            "FWP_LIBRARY to it or to libfwp_runtime.so (CUDA kernels from "
            "the disk cache, no compiler needed).")


def check(status):
    """Raises RuntimeError with the C ABI's message if `status` is not 0."""
    if status != 0:
        message = library().fwp_last_error().decode(errors="replace")
        raise RuntimeError(f"fwp: {message}")


class Handle:
    """An object of the C ABI (fwp_attention, fwp_scan), made by the C
    function `create` from `args` and freed by `destroy` once collected.
    An invalid description raises ValueError with the C ABI's message."""

    def __init__(self, create, destroy, *args):
        lib = library()
        handle = getattr(lib, create)(*args)
        if not handle:
            message = lib.fwp_last_error().decode(errors="replace")
            raise ValueError(f"fwp: {message}")
        self.lib, self.handle = lib, handle
        self._destroy = getattr(lib, destroy)

    def __del__(self):
        if getattr(self, "handle", None):
            self._destroy(self.handle)


_handles = {}
_handles_lock = threading.Lock()


def cached(cls, *key):
    """The one `cls(*key)` of this process (a Handle), made on first use."""
    with _handles_lock:
        handle = _handles.get((cls, key))
        if handle is None:
            handle = _handles[(cls, key)] = cls(*key)
        return handle


def _torch_alloc(user, size):
    """`user` is the device's ordinal (as a pointer-sized integer)."""
    import torch
    try:
        return torch.cuda.caching_allocator_alloc(int(size),
                                                  device=int(user or 0))
    except Exception:  # out of memory: the C side reports it, naming size
        return 0


def _torch_release(_user, ptr):
    import torch
    torch.cuda.caching_allocator_delete(int(ptr))


# Kept alive for the process: the C side calls them during every CUDA call.
_alloc_callback = _ALLOC(_torch_alloc)
_release_callback = _RELEASE(_torch_release)


def cuda_call(device):
    """The fwp_cuda_call of a call on tensors on `device` (cuda:N): that
    device, its current stream, PyTorch's caching allocator on it."""
    import torch
    index = device.index if device.index is not None else \
        torch.cuda.current_device()
    stream = torch.cuda.current_stream(device).cuda_stream
    return ctypes.byref(CudaCall(stream, _alloc_callback, _release_callback,
                                 index, index))


def compiler_available():
    """Whether the loaded library compiles kernels (libfwp.so) or only
    loads them from the disk cache (libfwp_runtime.so)."""
    return bool(library().fwp_compiler_available())


def library_path():
    """Where the loaded library was found (a path, or the name the system's
    library path resolved)."""
    library()
    return _library_path


def passed_over():
    """The libraries found but not loaded before the one in use, each with
    why (e.g. libfwp.so without MLIR/LLVM 22 beside libfwp_runtime.so)."""
    library()
    return list(_passed_over)


def cache_directory():
    """The disk cache's directory as the library reads the environment;
    None when the cache is off."""
    return library().fwp_cache_directory().decode() or None
