"""`python -m onechip` == the `onechip` console script."""

from onechip.cli.entry import main

main()
