#!/usr/bin/env python3
"""Travel times from a tteps model.pt, in Python with PyTorch.

    python3 docs/predict.py out/main/model.pt data/chengdu/trajectories.jsonl > predictions.jsonl

model.pt is a LibTorch archive: `torch.jit.load` opens it, with the hyperparameters
(`config.*`), the normalisation statistics (`stats.*`) and the weights (`weights`, under the
parameter names of tteps' DeepTTE). This script builds the same model in PyTorch (the DeepTTE of
bench/baselines/deeptte_ddp.py, parameter for parameter), loads the weights into it and prints
one JSON line per trip of a JSON-lines file: {"trip": i, "predicted_s": ..., "label_s": ...}.
"""
import argparse
import json
import os
import sys
import types

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                                "baselines"))
import deeptte_ddp  # noqa: E402  (the PyTorch DeepTTE, beside the DDP baseline)


def load(path):
    """The PyTorch DeepTTE with model.pt's hyperparameters, statistics and weights."""
    archive = torch.jit.load(path, map_location="cpu")
    value = lambda key: archive._c.getattr(key)  # noqa: E731  (keys hold dots)
    if value("format") != "tteps.deeptte.v1":
        raise SystemExit(f"{path}: not a tteps model (format {value('format')!r})")
    config = types.SimpleNamespace(
        kernel_size=value("config.kernel_size"), num_filter=value("config.num_filter"),
        pooling=value("config.pooling"), alpha=value("config.alpha"),
        num_final_fcs=value("config.num_final_fcs"), final_fc_size=value("config.final_fc_size"))
    stats = {f"{name}_{part}": float(value(f"stats.{name}_{part}"))
             for name in deeptte_ddp.STATS_KEYS for part in ("mean", "std")}
    model = deeptte_ddp.DeepTTE(config, stats)
    weights = {name: p for name, p in archive.weights.named_parameters()}
    weights.update({name: b for name, b in archive.weights.named_buffers()})
    missing = model.load_state_dict(weights, strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    return model.eval(), stats, config


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("trips", help="JSON-lines trips (the shipped sample's format)")
    parser.add_argument("--batch_size", type=int, default=256)
    args = parser.parse_args()
    model, stats, config = load(args.model)
    trips = deeptte_ddp.read_trips(args.trips, config.kernel_size)
    with torch.no_grad():
        for start in range(0, len(trips), args.batch_size):
            indices = range(start, min(len(trips), start + args.batch_size))
            batch = deeptte_ddp.make_batch(trips, indices, stats)
            for i, seconds in zip(indices, model.predict_seconds(batch).tolist()):
                print(json.dumps({"trip": i, "predicted_s": seconds,
                                  "label_s": float(batch["label"][i - start])}))


if __name__ == "__main__":
    main()
