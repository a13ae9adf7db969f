import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from javafix import java_env, java_warehouse  # noqa: E402,F401  (pytest fixtures)
