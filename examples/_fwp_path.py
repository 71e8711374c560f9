"""Makes `import fwp` find this checkout's package (python/fwp), which in
turn finds the build's libfwp.so; the examples import it first."""

import os
import sys

_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_root, "python"))
