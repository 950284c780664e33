"""`python -m eval.load`: sustained mixed load (`eval.load.sustained`)."""

from eval.load.sustained import main

if __name__ == "__main__":
    raise SystemExit(main())
