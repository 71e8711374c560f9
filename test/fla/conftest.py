"""Runs fla's own delta-rule tests (tests/ops/test_delta.py of fla, copied
beside this file by test/fla/run.sh, unchanged) on the CPU against fwp:

- `chunk_delta_rule`, the function under test, is fwp.fla's;
- `fused_recurrent_delta_rule`, the reference fla's tests compare with (a
  Triton kernel that needs a GPU), is fla's naive recurrence from the
  pinned fla-core package (test/python/fla_reference.py);
- fla.utils.device, 'cuda' on a machine without a GPU, is the CPU.
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ["FWP_TEST_PYTHON_DIR"])

import fla.ops.delta_rule  # noqa: E402
import fla.utils  # noqa: E402

import fla_reference  # noqa: E402
import fwp.fla  # noqa: E402

if fla.utils.FLA_CI_ENV:
    raise RuntimeError("FLA_CI_ENV=1 turns fla's assert_close into warnings:"
                       " unset it")
fla.utils.device = "cpu"
fla.ops.delta_rule.chunk_delta_rule = fwp.fla.chunk_delta_rule
fla.ops.delta_rule.fused_recurrent_delta_rule = \
    fla_reference.fused_recurrent_delta_rule
