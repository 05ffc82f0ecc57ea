"""`python -m onechip` == the `onechip` console script."""

from onechip.cli.main import main

main()
