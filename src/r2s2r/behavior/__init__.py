"""Behaviour: who moves the robot. IK, teleoperation (real demonstrations), object pose estimation
from the head stereo pair (``pose_estimation``).

Grounded behaviour: ``mimic.MimicBehavior`` (the ``mimic`` behaviour), MimicGen-style transformation
of the real demonstrations (``segments``, ``sources``).

Ungrounded behaviour (no human motion reference): ``grasps.GraspSampler`` (grasp proposals),
``collision.CellCollision`` (collision checks), ``rrt`` (RRT-Connect, shortcutting, timing),
``intercept`` (belt prediction, grasp track) and ``planner.MotionPlanner`` (the ``planner``
behaviour). Import them from their modules (this package imports nothing eagerly)."""
