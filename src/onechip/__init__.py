"""onechip: plan, launch, check, benchmark and price a lite agent backend on one accelerator."""

__version__ = "0.1.0"
