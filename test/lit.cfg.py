# Lit configuration of fwp's regression tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "fwp"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fwp_obj_root, "test")
config.substitutions.append(("%fwp_src_root", config.fwp_src_root))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["fwp-opt"], [config.fwp_tools_dir])
