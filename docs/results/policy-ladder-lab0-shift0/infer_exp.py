"""Throwaway: inference-time variants of a trained policy on a lab's nominal trials."""

import sys
import time
from pathlib import Path

import numpy as np
import torch

from r2s2r.evaluate.runner import EvalConfig, evaluate
from r2s2r.evaluate.trials import TrialPlan
from r2s2r.policy import load_policy
from r2s2r.policy.normalize import decode_actions


class Variant:
    def __init__(self, policy, k, scale):
        self.p, self.execute_steps, self.scale = policy, k, scale
        self.cameras, self.image_size = policy.cameras, policy.image_size
        self.action_horizon, self.past_frame = policy.action_horizon, policy.past_frame

    @torch.inference_mode()
    def predict_chunk(self, obs, rng):
        p = self.p
        tensors = p._tensors(obs)
        tokens = p._tokens(tensors)
        gen = torch.Generator().manual_seed(int(rng.integers(2**63 - 1)))
        shape = (tokens.shape[0], p.config.action_horizon, p.config.action_dim)
        noise = torch.randn(shape, generator=gen) * self.scale
        a = decode_actions(p.config, p.normalizer, p.model.sample(tokens, noise), tensors["proprio"])
        return a.cpu().numpy().astype(np.float32)


def main():
    run, lab, tseed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    variants = [tuple(float(x) for x in v.split(",")) for v in sys.argv[5:]]  # k,scale
    pol = load_policy(Path(run))
    for k, s in variants:
        name = f"k{int(k)}-s{s}"
        plan = TrialPlan(nominal=24, lighting=0, belt_speed=0, novel_object=0, combined=0, seed=tseed)
        t0 = time.time()
        res = evaluate(
            Variant(pol, int(k), s),
            lab,
            EvalConfig(plan=plan, batch=8, workers=2),
            out=out / f"t{tseed}-{name}",
            name=name,
        )
        o = res.outcomes
        fails = {}
        for x in o:
            if not x.success:
                fails[x.failure] = fails.get(x.failure, 0) + 1
        vel = sum(x.safety.get("velocity", 0) for x in o) / len(o)
        wins, touched, lifted = sum(x.success for x in o), sum(x.touched for x in o), sum(x.lifted for x in o)
        print(
            f"{run} lab{lab} trials{tseed} {name}: {wins}/{len(o)} touched {touched} lifted {lifted} "
            f"vel {vel:.2f} {fails} {time.time() - t0:.0f}s",
            flush=True,
        )


if __name__ == "__main__":
    main()
