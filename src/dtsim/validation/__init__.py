"""Validation against measured runs: the dataset (`records`), the predictions (`predict`), the
comparison (`runner`) and the fitted constants (`calibrate`). CLI: `dtsim validate`, `dtsim calibrate`."""

from dtsim.validation.calibrate import calibrate
from dtsim.validation.records import Dataset, load_dataset
from dtsim.validation.runner import validate

__all__ = ["Dataset", "calibrate", "load_dataset", "validate"]
