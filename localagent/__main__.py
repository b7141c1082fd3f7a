"""`python -m localagent`: the same command line as the `localagent` script."""

from localagent.cli import main

if __name__ == "__main__":
    main()
