"""Behaviour: who moves the robot. IK, teleoperation (real demonstrations) and, later,
MimicGen-style generation and motion planning.

Ungrounded behaviour (no human motion reference): ``grasps.GraspSampler`` (grasp proposals),
``collision.CellCollision`` (collision checks), ``rrt`` (RRT-Connect, shortcutting, timing),
``intercept`` (belt prediction, grasp track) and ``planner.MotionPlanner`` (the ``planner``
behaviour). Import them from their modules (this package imports nothing eagerly)."""
