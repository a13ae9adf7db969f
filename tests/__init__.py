from pathlib import Path

#: the repository (tests import helpers by ``tests.…`` and find files from here, wherever they sit)
REPO = Path(__file__).resolve().parent.parent
