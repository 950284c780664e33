"""`python -m eval.load`: sustained mixed load (`eval.load.sustained`)."""

import sys

from eval.load.sustained import main

if __name__ == "__main__":
    sys.argv[0] = "python -m eval.load"  # the name its --help shows
    raise SystemExit(main())
