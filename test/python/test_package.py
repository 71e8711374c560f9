"""The fwp package (python/fwp) against the seeds' PyTorch module in
float64 (seeds_reference.py) and finite differences (gradcheck), through
fwp's compiled CPU kernels."""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples"))
import seeds_pytorch as seeds_reference  # noqa: E402

fwp = pytest.importorskip("fwp")


def _library_or_skip():
    """Skips where no libfwp.so was built; fails where the build named one
    (ctest sets FWP_LIBRARY) and it does not load."""
    try:
        fwp._capi.library()
    except fwp.LibraryNotFound as error:
        if os.environ.get("FWP_LIBRARY"):
            pytest.fail(str(error))
        pytest.skip(str(error))


@pytest.fixture(autouse=True)
def library():
    _library_or_skip()


def relative_error(actual, expected):
    """max |actual - expected| / max |expected|, as fwp's C++ tests."""
    actual, expected = actual.double(), expected.double()
    scale = expected.abs().max().item() or 1.0
    return (actual - expected).abs().max().item() / scale


def seeds_pair(heads, d_model, nu, rule, dtype, seed=0):
    """The seeds' module in float64 and fwp's, with the same weights."""
    torch.manual_seed(seed)
    reference = seeds_reference.FastWeightsAttention(
        heads, d_model, 0.0, seeds_reference.DPFP(nu), sum_rule=rule == "sum")
    reference = reference.double()
    module = fwp.nn.FastWeightsAttention(heads, d_model, 0.0, fwp.nn.DPFP(nu),
                                         rule=rule)
    module.load_state_dict(reference.state_dict())  # strict: names match
    return reference, module.to(dtype)


def outputs_and_grads(module, x, dy):
    x = x.clone().requires_grad_(True)
    module.zero_grad()
    y = module(x)
    y.backward(dy)
    grads = {"x": x.grad}
    grads.update({name: p.grad for name, p in module.named_parameters()})
    return y.detach(), grads


CASES = [
    # steps, batch, heads, d_model, nu, rule: one chunk and a part (80),
    # one step, several heads, nu up to 3, both rules.
    (80, 2, 2, 16, 1, "delta"),
    (1, 3, 2, 16, 1, "delta"),
    (33, 1, 4, 16, 3, "delta"),
    (80, 2, 2, 16, 2, "sum"),
]


@pytest.mark.parametrize("steps,batch,heads,d_model,nu,rule", CASES)
def test_matches_the_seeds_module_in_float32(steps, batch, heads, d_model, nu,
                                             rule):
    reference, module = seeds_pair(heads, d_model, nu, rule, torch.float32)
    x = torch.randn(steps, batch, d_model, dtype=torch.float64)
    dy = torch.randn(steps, batch, d_model, dtype=torch.float64)
    expected_y, expected = outputs_and_grads(reference, x, dy)
    y, grads = outputs_and_grads(module, x.float(), dy.float())
    assert y.dtype == torch.float32
    assert relative_error(y, expected_y) < 1e-5
    for name, grad in grads.items():
        if rule == "sum" and name.startswith("interpolation_weight"):
            assert expected[name] is None and not grad.any(), name
            continue
        assert relative_error(grad, expected[name]) < 1e-4, name


def test_float64_matches_to_round_off():
    reference, module = seeds_pair(2, 16, 2, "delta", torch.float64)
    x = torch.randn(70, 2, 16, dtype=torch.float64)
    dy = torch.randn_like(x)
    expected_y, expected = outputs_and_grads(reference, x, dy)
    y, grads = outputs_and_grads(module, x, dy)
    assert relative_error(y, expected_y) < 1e-12
    for name, grad in grads.items():
        assert relative_error(grad, expected[name]) < 1e-11, name


@pytest.mark.parametrize("rule", ["delta", "sum"])
def test_gradients_match_finite_differences(rule):
    """torch.autograd.gradcheck: the compiled backward against central
    differences of the compiled forward, float64, in x and every weight."""
    torch.manual_seed(3)
    heads, d_model = 2, 8
    x = torch.randn(9, 2, d_model, dtype=torch.float64, requires_grad=True)
    weights = [torch.randn(d_model, d_model, dtype=torch.float64) * 0.5
               for _ in range(3)]
    weights += [torch.randn(heads, d_model, dtype=torch.float64),
                torch.randn(d_model, d_model, dtype=torch.float64) * 0.5,
                torch.randn(d_model, dtype=torch.float64)]
    for w in weights:
        w.requires_grad_(True)

    def run(x, *weights):
        return fwp.attention(x, *weights, heads=heads, nu=2, rule=rule)

    assert torch.autograd.gradcheck(run, (x, *weights), eps=1e-6, atol=1e-7,
                                    rtol=1e-5)


@pytest.mark.parametrize("dtype,unit", [(torch.bfloat16, 2.0 ** -8),
                                        (torch.float16, 2.0 ** -11)])
def test_16_bit_storage(dtype, unit):
    """16-bit inputs and outputs, float32 arithmetic: against the float64
    module on the same rounded inputs and weights, the output is off by its
    own rounding (half a unit in the last place, relative to its size, at
    most `unit` of the largest output) plus the float32 bound."""
    reference, module = seeds_pair(2, 16, 1, "delta", dtype)
    reference.load_state_dict({k: v.to(dtype).double()
                               for k, v in reference.state_dict().items()})
    x = torch.randn(80, 2, 16, dtype=torch.float64).to(dtype)
    with torch.no_grad():
        expected = reference(x.double())
        y = module(x)
    assert y.dtype == dtype
    assert relative_error(y, expected) < unit + 1.01e-5


def test_state_dict_names_are_the_seeds():
    _, module = seeds_pair(2, 16, 1, "delta", torch.float32)
    assert sorted(module.state_dict()) == sorted([
        "query.linear.weight", "key.linear.weight", "value.linear.weight",
        "interpolation_weight.0.linear.weight", "output.weight",
        "output.bias"])


def test_dpfp_matches_its_definition():
    """phi'(k)[(i-1) 2d + j] = x_j x_{(j - i) mod 2d} / (sum + eps),
    x = relu([k, -k]), element by element."""
    k = torch.randn(5, 3, dtype=torch.float64)
    nu, eps = 2, 1e-6
    phi = fwp.nn.DPFP(nu, eps)(k)
    for row in range(5):
        x = torch.relu(torch.cat([k[row], -k[row]]))
        two_d = x.numel()
        raw = [x[j] * x[(j - i) % two_d] for i in range(1, nu + 1)
               for j in range(two_d)]
        total = sum(raw)
        for f, value in enumerate(raw):
            assert abs(phi[row, f].item() - (value / (total + eps)).item()) \
                < 1e-15


def weights_for(d_model, heads, dtype=torch.float32):
    square = lambda: torch.randn(d_model, d_model, dtype=dtype)  # noqa: E731
    return [square(), square(), square(),
            torch.randn(heads, d_model, dtype=dtype), square(),
            torch.randn(d_model, dtype=dtype)]


def test_bad_arguments_raise_clear_errors():
    x = torch.randn(5, 2, 16)
    w = weights_for(16, 2)

    def call(x=x, w=w, **options):
        return fwp.attention(x, *w, **{"heads": 2, **options})

    with pytest.raises(ValueError, match=r"x has shape \[5, 16\]"):
        call(x=x[:, 0])
    with pytest.raises(ValueError, match=r"w_k has shape \[16, 8\]"):
        call(w=[w[0], w[1][:, :8].contiguous()] + w[2:])
    with pytest.raises(TypeError, match="w_v is torch.float64"):
        call(w=w[:2] + [w[2].double()] + w[3:])
    with pytest.raises(TypeError, match="x is torch.int64"):
        call(x=torch.zeros(5, 2, 16, dtype=torch.int64))
    with pytest.raises(ValueError, match="on meta"):
        call(x=torch.empty(5, 2, 16, device="meta"))
    with pytest.raises(ValueError, match="heads = 3 does not divide"):
        call(w=weights_for(16, 3), heads=3)
    with pytest.raises(ValueError, match="nu = 16"):
        call(nu=16)
    with pytest.raises(ValueError, match="rule is 'hebb'"):
        call(rule="hebb")
    with pytest.raises(ValueError, match="eps"):
        call(eps=0.0)
    with pytest.raises(TypeError, match="phi is a ReLU"):
        fwp.nn.FastWeightsAttention(2, 16, 0.0, torch.nn.ReLU())


def test_empty_sequence():
    module = fwp.nn.FastWeightsAttention(2, 16, 0.0, fwp.nn.DPFP())
    x = torch.zeros(0, 2, 16, requires_grad=True)
    y = module(x)
    assert y.shape == (0, 2, 16)
    y.sum().backward()
    assert not module.output.weight.grad.any()


@pytest.mark.parametrize("rule", ["delta", "sum"])
def test_steps_of_the_module_equal_its_forward(rule):
    """FastWeightsAttention.step, token by token (decoding), against the
    seeds' module on the whole sequence, float64."""
    reference, module = seeds_pair(2, 16, 2, rule, torch.float64)
    x = torch.randn(12, 3, 16, dtype=torch.float64)
    with torch.no_grad():
        expected = reference(x)
        state = None
        for t in range(12):
            y, state = module.step(x[t], state)
            assert relative_error(y, expected[t]) < 1e-12


def test_a_missing_library_is_named(tmp_path):
    """Where libfwp.so cannot be loaded, the first call says what was tried
    and how to get it (a fresh process: the library loads once)."""
    import subprocess
    missing = tmp_path / "libfwp.so"
    script = ("import fwp, torch\n"
              "try:\n"
              "    fwp.delta_rule(*[torch.zeros(1, 1, 1, 2)] * 3,\n"
              "                   torch.zeros(1, 1, 1))\n"
              "except fwp.LibraryNotFound as e:\n"
              "    print(e)\n")
    env = dict(os.environ, FWP_LIBRARY=str(missing))
    out = subprocess.run([sys.executable, "-c", script], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert str(missing) in out and "no such file" in out
    assert "make build" in out


def test_python_m_fwp_names_version_library_backends_and_cache(tmp_path):
    """`python -m fwp` prints the version, the library it loaded, what it
    can run on and where the disk cache is, as the environment says."""
    import subprocess
    env = dict(os.environ, FWP_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("FWP_CACHE", None)
    out = subprocess.run([sys.executable, "-m", "fwp"], env=env,
                         capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == f"fwp {fwp.__version__}"
    library = lines[1].split()[1]
    assert os.path.basename(library).startswith("libfwp")
    assert "cpu" in lines[2].split(": ", 1)[1].split("; ")
    assert lines[3] == f"cache: {tmp_path / 'cache'}"
    env["FWP_CACHE"] = "off"
    out = subprocess.run([sys.executable, "-m", "fwp"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[3].startswith("cache: off")


def test_version_is_the_build_s():
    """The package's version is the CMake project's."""
    cmake = open(os.path.join(os.path.dirname(__file__), "..", "..",
                              "CMakeLists.txt")).read()
    assert f"project(fwp VERSION {fwp.__version__} " in cmake


def test_installed_package_falls_back_to_the_runtime_library(tmp_path):
    """An installed package (libraries in fwp/lib, as `pip install` puts
    them) whose libfwp.so cannot load, as without MLIR/LLVM 22, runs on
    libfwp_runtime.so, and `python -m fwp` says what was passed over and
    what it cannot do."""
    import shutil
    import subprocess
    runtime = os.path.join(os.path.dirname(fwp._capi.library_path()),
                           "libfwp_runtime.so")
    if not os.path.exists(runtime):
        pytest.skip(f"no {runtime} beside the loaded library")
    package = tmp_path / "site" / "fwp"
    shutil.copytree(os.path.dirname(fwp.__file__), package,
                    ignore=shutil.ignore_patterns("__pycache__", "lib"))
    (package / "lib").mkdir()
    (package / "lib" / "libfwp.so").write_bytes(b"not a shared library")
    shutil.copy(runtime, package / "lib")
    env = {k: v for k, v in os.environ.items()
           if k not in ("FWP_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = str(tmp_path / "site")
    out = subprocess.run([sys.executable, "-m", "fwp"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    assert f"library: {package / 'lib' / 'libfwp_runtime.so'} (no compiler" \
        in out
    assert f"not loaded: {package / 'lib' / 'libfwp.so'}" in out
    assert "cannot: compile kernels, or run on the CPU" in out
