"""The scripted teleop operator driving an r2s2r cell through the Gymnasium API.

    .venv/bin/python examples/gym_scripted.py [--env lab|sim] [--episodes 3] [--lab 0]
                                              [--world FILE] [--condition nominal] [--seed 0]

Each episode is ``env.reset(seed=...)`` then ``env.step(action)`` until it terminates or is
truncated; the action comes from ``ScriptedOperator``, a person's motion model that watches the
cell through ``env.unwrapped.station`` (the teleoperator's own view, not the observation a policy
gets). It looks at no camera, so the environment renders none. Prints one line per episode.
"""

from __future__ import annotations

import argparse

import gymnasium
import numpy as np

import r2s2r.gym
from r2s2r.evaluate.policies import ScriptedOperator


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", choices=("lab", "sim"), default="lab", help="the lab twin or a simulated cell")
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--lab", type=int, default=0, help="lab twin seed (--env lab)")
    ap.add_argument("--world", default=None, help="WorldParams JSON (--env sim; default: nominal)")
    ap.add_argument("--condition", default="nominal", help="condition kind of every episode")
    ap.add_argument("--seed", type=int, default=0, help="episode i resets with seed + i")
    args = ap.parse_args()

    operator = ScriptedOperator()
    kwargs = {"condition": args.condition, "cameras": operator.cameras}
    if args.env == "lab":
        env = gymnasium.make(r2s2r.gym.LAB_TWIN_ID, lab=args.lab, **kwargs)
    else:
        env = gymnasium.make(r2s2r.gym.SIM_CELL_ID, world=args.world, **kwargs)
    successes = 0
    try:
        for i in range(args.episodes):
            obs, info = env.reset(seed=args.seed + i)
            act = operator.begin(env.unwrapped.station, np.random.default_rng(args.seed + i))
            ret, steps, done = 0.0, 0, False
            while not done:
                obs, reward, terminated, truncated, info = env.step(act(obs))
                ret, steps, done = ret + reward, steps + 1, terminated or truncated
            successes += info["success"]
            print(
                f"episode {i}: success={info['success']} failure={info['failure']} return={ret:.0f} "
                f"steps={steps} ({info['time']:.1f} s) safety={info['safety']}"
            )
    finally:
        env.close()
    print(f"{successes}/{args.episodes} episodes succeeded")


if __name__ == "__main__":
    main()
