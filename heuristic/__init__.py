"""The cost heuristic of the paper (section 4): calibration fit and prediction.

Filled in by the heuristic issue; the platform file it will read is written by
jvmos.calibrate.
"""
