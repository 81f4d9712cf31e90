#!/usr/bin/env python3
"""PyTorch DistributedDataParallel baseline: DeepTTE as tteps builds it, on CPUs or GPUs.

The model, the data pipeline (parsing, normalisation, epoch order, per-worker slices) and the
optimizer mirror model/deeptte, model/data and worker/gradient_step.cc, so that a run here
and a tteps run with the same flags differ only in how gradients are exchanged; the model, the
trip parser and the batches are those of worker/tools/tteps_predict.py. The W processes
rendezvous over gloo on 127.0.0.1; rank 0 logs, evaluates and writes the outputs.
Across hosts, start one process per rank with --rank R and --master_addr (rank 0's address,
which gloo also uses to pick the interface) and the same --master_port everywhere.
--device cuda: rank r trains on GPU r % (the host's GPUs), over NCCL instead of gloo (over gloo
still where ranks share a GPU, which NCCL refuses).
"""
import argparse
import datetime
import itertools
import json
import math
import os
import resource
import socket
import sys
import time
import traceback

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "worker", "tools"))
from tteps_predict import (  # noqa: E402
    STATS_KEYS, DataError, DeepTTE, is_number, make_batch, read_trips)

DEFAULT_PARAMS = 710923  # tteps' parameter count for the default model config
MODEL_DEFAULTS = {"kernel_size": 3, "num_filter": 32, "pooling": "attention", "alpha": 0.1,
                  "num_final_fcs": 3, "final_fc_size": 128}


def log(msg):
    print(f"deeptte_ddp: {msg}", file=sys.stderr, flush=True)


# --- The C++ random order: std::mt19937_64 and model/data/shuffle.cc, bit for bit. ---------

class Mt19937_64:
    N, M, MASK = 312, 156, (1 << 64) - 1

    def __init__(self, seed):
        self.mt = [seed & self.MASK]
        for i in range(1, self.N):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & self.MASK)
        self.index = self.N

    def _twist(self):
        mt, n = self.mt, self.N
        for i in range(n):
            y = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % n] & 0x7FFFFFFF)
            mt[i] = mt[(i + self.M) % n] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
        self.index = 0

    def __call__(self):
        if self.index == self.N:
            self._twist()
        x = self.mt[self.index]
        self.index += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        return (x ^ (x >> 43)) & self.MASK


def uniform_below(rng, bound):
    threshold = (2**64 - bound) % bound  # rejection keeps every result equally likely
    while True:
        r = rng()
        if r >= threshold:
            return r % bound


def fisher_yates(v, rng):
    for i in range(len(v), 1, -1):
        j = uniform_below(rng, i)
        v[i - 1], v[j] = v[j], v[i - 1]


# --- Data: norm_stats.cc, dataset.cc, batcher.cc, batch_slicer.cc. --------------------------

def load_stats(path):
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except (OSError, ValueError) as e:
        raise DataError(f"cannot read stats file '{path}': {e}") from None
    stats = {}
    for key in (f"{name}_{part}" for name in STATS_KEYS for part in ("mean", "std")):
        value = obj.get(key) if isinstance(obj, dict) else None
        if not is_number(value) or not math.isfinite(value) or (
                key.endswith("_std") and value <= 0):
            raise DataError(f"{path}: key '{key}': missing, not a finite number or a std <= 0")
        stats[key] = float(value)
    return stats


def split_trips(trips, args):
    """dataset.cc: the eval set is --eval_data, or the tail / a seeded random part."""
    if args.eval_data:
        return trips, read_trips(args.eval_data, args.kernel_size)
    n_eval = int(math.floor(len(trips) * args.eval_fraction + 0.5))  # std::llround
    if args.split == "tail":
        eval_idx = set(range(len(trips) - n_eval, len(trips)))
    else:  # split.cc: SplitByFraction
        order = list(range(len(trips)))
        fisher_yates(order, Mt19937_64(args.split_seed))
        eval_idx = set(order[:n_eval])
    train = [t for i, t in enumerate(trips) if i not in eval_idx]
    return train, [t for i, t in enumerate(trips) if i in eval_idx]


def epoch_batches(lengths, batch_size, seed, epoch):
    """batcher.cc: shuffle, sort chunks of 100 batches longest first (stably), cut."""
    n = len(lengths)
    order = list(range(n))
    fisher_yates(order, Mt19937_64(seed + epoch))
    chunk = n if batch_size > n // 100 else batch_size * 100
    for begin in range(0, n, chunk):
        order[begin:begin + chunk] = sorted(order[begin:begin + chunk], key=lambda i: -lengths[i])
    return [order[b:b + batch_size] for b in range(0, n, batch_size)]


def global_batches(lengths, batch_size, seed):
    for epoch in itertools.count():
        for batch in epoch_batches(lengths, batch_size, seed, epoch):
            yield epoch, batch


SLICE_OVERHEAD = 16  # batch_slicer.h: kSliceOverhead


def _fill(lengths, workers, limit, keep_one):
    """batch_slicer.cc Fill: parts from the front, each as long as its cost stays in limit."""
    n, at, sizes = len(lengths), 0, []
    for w in range(workers):
        if at >= n:
            break
        cap = n - at - (workers - w - 1) if keep_one else n - at
        take = longest = 0
        while take < cap:
            l = max(longest, lengths[at + take])
            if l * (take + 1 + SLICE_OVERHEAD) > limit:
                break
            longest, take = l, take + 1
        sizes.append(take)
        at += take
    return sizes + [0] * (workers - len(sizes))


def balanced_sizes(lengths, workers):
    """batch_slicer.cc BalancedSliceSizes: the smallest cost limit that covers the batch."""
    n = len(lengths)
    lo, hi = 0, max([max(l, 1) for l in lengths] or [0]) * (n + SLICE_OVERHEAD)
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if sum(_fill(lengths, workers, mid, False)) == n:
            hi = mid
        else:
            lo = mid + 1
    return _fill(lengths, workers, hi, n >= workers)


def slice_for(batch, workers, rank, trip_lengths=None):
    """batch_slicer.cc: balanced by estimated cost with trip_lengths, else an even split (the
    remainder one by one to the first ranks)."""
    if trip_lengths is not None:
        sizes = balanced_sizes([trip_lengths[i] for i in batch], workers)
    else:
        sizes = [len(batch) // workers + (w < len(batch) % workers) for w in range(workers)]
    begin = sum(sizes[:rank])
    return batch[begin:begin + sizes[rank]]


def to_device(batch, device):
    """batch_tensors.cc: to a GPU through pinned memory, without waiting for the copy."""
    if device.type == "cpu":
        return batch
    return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}


@torch.no_grad()
def evaluate(model, trips, stats, batch_size):
    """evaluator.cc: MAPE, RMSE and MAE in seconds of the entire estimator, in double."""
    abs_pct = sq = abs_err = 0.0
    device = next(model.parameters()).device
    for start in range(0, len(trips), batch_size):
        b = to_device(make_batch(trips, range(start, min(len(trips), start + batch_size)), stats),
                      device)
        err = model.predict_seconds(b).double() - b["label"].double()
        abs_pct += float((err.abs() / b["label"].double()).sum())
        sq += float((err * err).sum())
        abs_err += float(err.abs().sum())
    n = len(trips)
    if n == 0:
        return {"mape": 0.0, "rmse": 0.0, "mae": 0.0, "n": 0}
    return {"mape": abs_pct / n, "rmse": math.sqrt(sq / n), "mae": abs_err / n, "n": n}


# --- Training: one process per rank. -------------------------------------------------------

def total_steps(args, num_trips):
    """train_options.cc TotalSteps: epochs x ceil(N / B), capped by max_steps when set."""
    total = math.ceil(num_trips / args.batch_size) * max(args.epochs, 0)
    if args.max_steps > 0 and (args.epochs < 1 or args.max_steps < total):
        total = args.max_steps
    return total


def make_optimizer(args, params):
    if args.optimizer == "adam":
        return torch.optim.Adam(params, lr=args.lr)
    momentum = args.momentum if args.optimizer == "momentum" else 0.0
    return torch.optim.SGD(params, lr=args.lr, momentum=momentum)


class LastGradClock:
    """Time of the last parameter gradient of a backward pass: what comes after it inside
    DDP's backward is waiting for the allreduce of the remaining buckets (and their copy-out)."""

    def __init__(self, params):
        self.t = 0.0
        for p in params:
            p.register_hook(self._mark)

    def _mark(self, grad):
        self.t = time.perf_counter()


class Window:
    """Trips and loss since the last metrics line."""

    def __init__(self):
        self.local_loss, self.global_loss, self.trips, self.seconds = 0.0, 0.0, 0, 0.0


def append_jsonl(path, record):
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def build_model(rank, args, stats):
    torch.manual_seed(args.seed)
    model = DeepTTE(args, stats).to(args.torch_device)
    n_params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        log(f"parameters: {n_params}")
    if all(getattr(args, k) == v for k, v in MODEL_DEFAULTS.items()):
        assert n_params == DEFAULT_PARAMS, f"{n_params} parameters, tteps has {DEFAULT_PARAMS}"
    return model, n_params


def train_loop(rank, args, model, train, eval_trips, stats):
    """Trains to the planned step or the time budget; rank 0 writes the metrics lines."""
    # Default DDP: 25 MB buckets (as our --bucket_mb) reduced while backward goes on; the
    # constructor broadcasts rank 0's parameters, as our ring workers start from worker 0's.
    device = args.torch_device
    ddp = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    optimizer = make_optimizer(args, model.parameters())
    clock = LastGradClock(model.parameters())
    metrics = os.path.join(args.out_dir, "metrics.jsonl")
    planned = total_steps(args, len(train))
    lengths = [len(t["lngs"]) for t in train]
    stream = global_batches(lengths, args.batch_size, args.seed)
    times = np.zeros(4)  # forward, backward without the allreduce wait, wait, optimizer
    window = Window()
    steps = trips = 0
    stopped = False
    eval_s = last_eval = 0.0

    def train_clock():  # seconds of training so far, rank 0's evaluations excluded
        return time.perf_counter() - start - eval_s

    dist.barrier()
    start = time.perf_counter()
    while steps < planned and not stopped:
        t0 = time.perf_counter()
        epoch, batch = next(stream)
        mine = slice_for(batch, args.workers, rank,
                         lengths if args.slicing == "balanced" else None)
        # Our workers sum per-trip gradients and divide by the global trip count; DDP averages
        # the ranks' mean-loss gradients. Scaling this rank's loss by local * W / global turns
        # DDP's average into the same trip-weighted mean (the factor is 1 for equal slices).
        # A rank without trips (a final batch smaller than W) runs one trip with weight 0 so
        # that it still joins the allreduce.
        weight = len(mine) * args.workers / len(batch)
        tensors = to_device(make_batch(train, mine or [0], stats), device)
        optimizer.zero_grad()
        loss = ddp(tensors)  # batch building is counted in forward, as in our compute time
        t1 = time.perf_counter()
        (loss * weight).backward()
        t2 = time.perf_counter()
        optimizer.step()
        times += (t1 - t0, clock.t - t1, t2 - clock.t, time.perf_counter() - t2)
        steps += 1
        trips += len(batch)
        window.local_loss += float(loss) * len(mine)
        window.trips += len(batch)
        last = steps == planned
        log_due = last or steps % args.log_every == 0
        if args.max_train_s > 0 or log_due:
            # Rank 0's stop vote (the time budget) and the window's loss share one allreduce.
            vote = rank == 0 and 0 < args.max_train_s <= train_clock()
            sums = torch.tensor([window.local_loss, float(vote)], dtype=torch.float64,
                                device=device)
            dist.all_reduce(sums)
            window.global_loss = sums[0].item()
            stopped = sums[1].item() > 0 and not last
        window.seconds += time.perf_counter() - t0
        if log_due or stopped:
            if rank == 0:
                append_jsonl(metrics, {
                    "type": "train", "step": steps, "epoch": epoch,
                    "wall_s": time.perf_counter() - start,
                    "loss": window.global_loss / window.trips, "trips": window.trips,
                    "trips_per_s": window.trips / window.seconds})
                log(f"step {steps}/{planned} loss {window.global_loss / window.trips:.4f}"
                    f" trips/s {window.trips / window.seconds:.1f}")
            window = Window()
        if (rank == 0 and 0 < args.eval_every_s <= train_clock() - last_eval
                and not (last or stopped)):
            t = time.perf_counter()  # meanwhile the other ranks wait in the next allreduce
            append_jsonl(metrics, {
                "type": "eval", "step": steps, "train_s": train_clock(),
                "eval": evaluate(model, eval_trips, stats, args.eval_batch_size)})
            eval_s += time.perf_counter() - t
            last_eval = train_clock()
    return {"epochs": epoch + 1, "steps": steps, "planned_steps": planned,
            "stopped_by_time_budget": stopped, "trips": trips, "train_seconds": train_clock(),
            "step_times": times / steps}


def gather_rank_stats(args, step_times):
    """[rank][peak RSS MB, forward, backward, wait, optimizer s per step], on every rank."""
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    mine = torch.tensor([rss_mb, *step_times], dtype=torch.float64, device=args.torch_device)
    gathered = [torch.zeros_like(mine) for _ in range(args.workers)]
    dist.all_gather(gathered, mine)
    return torch.stack(gathered).cpu().numpy()


def write_summary(args, model, eval_trips, stats, result, per_rank, n_params, launch_time):
    """Rank 0, after training: the final evaluation, its metrics line and summary.json."""
    final_eval = evaluate(model, eval_trips, stats, args.eval_batch_size)
    append_jsonl(os.path.join(args.out_dir, "metrics.jsonl"),
                 {"type": "eval", "step": result["steps"], "train_s": result["train_seconds"],
                  "eval": final_eval})
    per_rank[0, 0] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # eval too
    forward, backward, wait, opt = per_rank[:, 1:].mean(0)
    summary = {
        "mode": "ddp", "workers": args.workers, "batch_size": args.batch_size,
        **{k: result[k] for k in ("epochs", "steps", "planned_steps", "stopped_by_time_budget",
                                  "trips")},
        "trips_per_s": result["trips"] / result["train_seconds"],
        "train_seconds": result["train_seconds"],
        "wall_seconds": time.time() - launch_time,
        "parameters": n_params, "threads": args.threads, "optimizer": args.optimizer,
        "lr": args.lr, "torch": torch.__version__,
        # Means over steps and ranks. compute = forward (with batch building) + backward up to
        # the last parameter gradient + optimizer; wait = the rest of DDP's backward, i.e.
        # waiting for the allreduce that did not overlap with the gradient computation.
        "step_time_s": {"compute": forward + backward + opt, "wait": wait, "forward": forward,
                        "backward": backward, "optimizer": opt},
        "peak_rss_mb": per_rank[:, 0].round(1).tolist(),
        "final_eval": final_eval,
    }
    with open(os.path.join(args.out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)


def train_rank(rank, args, train, eval_trips, stats, port, launch_time):
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda: CUDA is not available to this PyTorch")
        args.torch_device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(args.torch_device)
    else:
        args.torch_device = torch.device("cpu")
    # NCCL refuses two ranks on one GPU ("Duplicate GPU detected"): ranks that share GPUs
    # reduce over gloo, which takes CUDA tensors too.
    sharing = args.device == "cuda" and args.workers > torch.cuda.device_count()
    if sharing and rank == 0:
        log(f"{args.workers} ranks share {torch.cuda.device_count()} GPU(s): gloo, not NCCL")
    backend = "nccl" if args.device == "cuda" and not sharing else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://{args.master_addr}:{port}", rank=rank,
                            world_size=args.workers,
                            timeout=datetime.timedelta(seconds=args.timeout_s))
    model, n_params = build_model(rank, args, stats)
    result = train_loop(rank, args, model, train, eval_trips, stats)
    # Gathered before rank 0's final evaluation, so a long one cannot hit the gloo timeout.
    per_rank = gather_rank_stats(args, result["step_times"])
    dist.destroy_process_group()
    if rank == 0:
        write_summary(args, model, eval_trips, stats, result, per_rank, n_params, launch_time)


def run_rank(rank, *args):
    try:
        train_rank(rank, *args)
    except Exception:
        log(f"rank {rank} failed (a dead peer shows up here as a gloo error or timeout):\n"
            + traceback.format_exc())
        sys.exit(1)


# --- Command line. --------------------------------------------------------------------------


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=1, help="DDP processes")
    p.add_argument("--train_data", required=True,
                   help="DeepTTE JSON-lines trips; several files separated by commas")
    p.add_argument("--eval_data", default="", help="eval trips; else --eval_fraction of train")
    p.add_argument("--eval_fraction", type=float, default=0.1667)
    p.add_argument("--split", choices=("random", "tail"), default="random")
    p.add_argument("--split_seed", type=int, default=1, help="seed of the random split")
    p.add_argument("--stats", required=True, help="normalisation statistics (stats.json)")
    p.add_argument("--batch_size", type=int, default=64, help="global trips per step")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--max_steps", type=int, default=0, help="0: no cap")
    p.add_argument("--seed", type=int, default=1, help="weight init and data order")
    p.add_argument("--optimizer", choices=("adam", "sgd", "momentum"), default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per process")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: rank r on GPU r %% GPUs, NCCL")
    p.add_argument("--log_every", type=int, default=10)
    p.add_argument("--eval_every_s", type=float, default=0, help="0: evaluate at the end only")
    p.add_argument("--eval_batch_size", type=int, default=256)
    p.add_argument("--max_train_s", type=float, default=0, help="time budget (0: none)")
    p.add_argument("--timeout_s", type=float, default=60, help="gloo rendezvous/collectives")
    p.add_argument("--out_dir", required=True)
    p.add_argument("--slicing", choices=("balanced", "even"), default="even",
                   help="as tteps' --slicing: the same trips per rank as its workers get")
    p.add_argument("--rank", type=int, default=-1,
                   help="run only this rank (one process per rank, e.g. one per host); "
                        "-1: spawn all W here")
    p.add_argument("--master_addr", default="127.0.0.1", help="rank 0's address")
    p.add_argument("--master_port", type=int, default=0, help="rendezvous port (0: a free one)")
    for key, value in MODEL_DEFAULTS.items():
        p.add_argument(f"--{key}", type=type(value), default=value)
    args = p.parse_args()
    if args.workers < 1 or args.batch_size < 1 or args.log_every < 1 or args.threads < 1:
        p.error("--workers, --batch_size, --log_every and --threads must be >= 1")
    if args.rank >= args.workers or (args.rank >= 0 and args.master_port < 1):
        p.error("--rank must be < --workers and needs --master_port")
    if args.epochs < 1 and args.max_steps < 1:
        p.error("--epochs or --max_steps must be >= 1")
    if args.eval_batch_size < 1 or args.kernel_size < 2 or not 0 <= args.eval_fraction < 1:
        p.error("need --eval_batch_size >= 1, --kernel_size >= 2, --eval_fraction in [0, 1)")
    if (args.pooling not in ("attention", "mean") or not 0 <= args.alpha <= 1
            or min(args.num_filter, args.final_fc_size, args.num_final_fcs + 1) < 1):
        p.error("model config (as model_config.cc): --pooling attention or mean, --alpha in "
                "[0, 1], --num_filter and --final_fc_size >= 1, --num_final_fcs >= 0")
    return args


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    launch_time = time.time()
    args = parse_args()
    try:
        stats = load_stats(args.stats)
        trips = [t for path in args.train_data.split(",")
                 for t in read_trips(path, args.kernel_size)]
        train, eval_trips = split_trips(trips, args)
    except DataError as e:
        sys.exit(f"deeptte_ddp: {e}")
    if not train:
        sys.exit("deeptte_ddp: the training set is empty")
    log(f"{len(train)} train, {len(eval_trips)} eval trips; {args.workers} process(es)")
    os.makedirs(args.out_dir, exist_ok=True)
    if args.rank > 0:  # one rank of a job across hosts: rank 0 writes the outputs
        run_rank(args.rank, args, train, eval_trips, stats, args.master_port, launch_time)
        return
    for name in ("metrics.jsonl", "summary.json"):
        if os.path.exists(os.path.join(args.out_dir, name)):
            os.remove(os.path.join(args.out_dir, name))
    if args.rank == 0:
        run_rank(0, args, train, eval_trips, stats, args.master_port, launch_time)
        return
    try:
        mp.spawn(run_rank, nprocs=args.workers, join=True,
                 args=(args, train, eval_trips, stats, args.master_port or free_port(),
                       launch_time))
    except (mp.ProcessExitedException, mp.ProcessRaisedException) as e:
        sys.exit(f"deeptte_ddp: a worker process failed ({e}); the others were stopped")
    with open(os.path.join(args.out_dir, "summary.json"), encoding="utf-8") as f:
        print(f.read())


if __name__ == "__main__":
    main()
