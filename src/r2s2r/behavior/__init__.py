"""Behaviour: who moves the robot. IK, teleoperation (real demonstrations), object pose estimation
from the head stereo pair, and MimicGen-style generation from the demonstrations (``mimic``)."""
