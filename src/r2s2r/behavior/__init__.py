"""Behaviour: who moves the robot. IK, teleoperation (real demonstrations) and, later,
MimicGen-style generation and motion planning."""
