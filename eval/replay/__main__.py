"""`python -m eval.replay`: the retrieval replay (`eval.replay.run`)."""

from eval.replay.run import main

if __name__ == "__main__":
    raise SystemExit(main())
