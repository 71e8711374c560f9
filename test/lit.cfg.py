# Lit configuration of fwp's regression tests.
import os
import shutil
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "fwp"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["unit", "Inputs", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fwp_obj_root, "test")
config.substitutions.append(("%fwp_src_root", config.fwp_src_root))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["fwp-opt", "fwp-compile"],
                                   [config.fwp_tools_dir])
config.substitutions.append(("%python", sys.executable))

# ptxas checks the PTX we generate; without it those tests are reported as
# UNSUPPORTED (ctest shows them as skipped), never as passing.
ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
else:
    lit_config.note("ptxas not found: skipping the PTX assembly tests")
# libdevice provides exp (the gate's sigmoid) to the PTX pipeline.
if os.path.isdir("/usr/local/cuda/nvvm/libdevice"):
    config.available_features.add("libdevice")
else:
    lit_config.note("no CUDA libdevice in /usr/local/cuda: skipping the PTX "
                    "assembly tests")
