"""Predicting a serving engine before renting it: a step-time model (sim.steptime), a discrete-event
simulation of vLLM's V1 scheduler (sim.scheduler, sim.predict), calibration of the step-time terms from a
few measured cells (sim.calibrate) and its store under $ONECHIP_HOME (sim.store).

Pure and seeded, except sim.store: the same plan, terms, workload and seed give the same samples.
"""

from onechip.sim.calibrate import calibrate, check_cells, key_of, transfer
from onechip.sim.predict import CellPrediction, agent_shape, simulate_cell, simulate_grid, with_whole_run
from onechip.sim.steptime import roofline_priors

__all__ = [
    "CellPrediction",
    "agent_shape",
    "calibrate",
    "check_cells",
    "key_of",
    "roofline_priors",
    "simulate_cell",
    "simulate_grid",
    "transfer",
    "with_whole_run",
]
