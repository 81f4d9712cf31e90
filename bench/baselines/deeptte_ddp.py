#!/usr/bin/env python3
"""PyTorch DistributedDataParallel baseline: DeepTTE as tteps builds it, on CPUs or GPUs.

The model, the data pipeline (parsing, normalisation, epoch order, per-worker slices) and the
optimizer mirror worker/deeptte, worker/data and worker/gradient_step.cc, so that a run here
and a tteps run with the same flags differ only in how gradients are exchanged. The W
processes rendezvous over gloo on 127.0.0.1; rank 0 logs, evaluates and writes the outputs.
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
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

# worker/data/trip.h and worker/deeptte/model_config.h.
NUM_DRIVERS, NUM_DATES, NUM_WEEKDAYS, NUM_MINUTES = 24000, 31, 7, 1440
ATTR_SIZE = 16 + 3 + 8 + 1  # three embeddings + normalised distance
HIDDEN_SIZE = 128
LSTM_GROUP = 64  # spatio_temporal.cc: trips per LSTM call in large batches
LOCAL_EPS_S = 10.0  # deeptte.cc: added to the local label in the local loss
DEFAULT_PARAMS = 710923  # tteps' parameter count for the default model config
STATS_KEYS = ("dist", "time", "lngs", "lats", "time_gap", "dist_gap")
SEQUENCES = ("lngs", "lats", "states", "time_gap", "dist_gap")
MODEL_DEFAULTS = {"kernel_size": 3, "num_filter": 32, "pooling": "attention", "alpha": 0.1,
                  "num_final_fcs": 3, "final_fc_size": 128}


def log(msg):
    print(f"deeptte_ddp: {msg}", file=sys.stderr, flush=True)


# --- The C++ random order: std::mt19937_64 and worker/data/shuffle.cc, bit for bit. ---------

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


# --- Data: trip_parser.cc, norm_stats.cc, dataset.cc, batcher.cc, batch_slicer.cc. ----------

class DataError(Exception):
    pass


class FieldError(Exception):
    def __init__(self, field, reason):
        super().__init__(f"field '{field}': {reason}")


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _get_number(obj, key):
    if key not in obj:
        raise FieldError(key, "missing")
    v = obj[key]
    if not _is_number(v) or not math.isfinite(v):
        raise FieldError(key, f"expected a finite number, got {json.dumps(v)[:40]}")
    return float(v)


def _get_id(obj, key, limit):
    v = _get_number(obj, key)
    if v != math.floor(v) or not 0 <= v < limit:
        raise FieldError(key, f"expected an integer in [0, {limit}), got {v}")
    return int(v)


def _get_sequence(obj, key, kind):
    seq = obj.get(key)
    if not isinstance(seq, list):
        raise FieldError(key, "missing" if seq is None else "expected an array of numbers")
    bad = next((i for i, v in enumerate(seq) if not _is_number(v)), None)
    if bad is not None:
        raise FieldError(key, f"element {bad} is not a number")
    values = np.asarray(seq, dtype=np.float64)
    as_float = values.astype(np.float32)  # the C++ keeps per-point values as floats
    checks = [(~np.isfinite(as_float), "is not finite as a float")]
    if kind == "zero_or_one":
        checks.append(((values != 0) & (values != 1), "is not 0 or 1"))
    if kind == "cumulative":
        checks += [(values < 0, "is negative"),
                   (np.r_[False, as_float[1:] < as_float[:-1]], "is below the previous one")]
    for bad_mask, reason in checks:
        if bad_mask.any():
            i = int(np.argmax(bad_mask))
            raise FieldError(key, f"element {i} ({values[i]}) {reason}")
    return as_float


def parse_trip(line, min_points):
    """One JSON line -> dict of the fields the model uses; FieldError names the bad field."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise FieldError("<json>", str(e)) from None
    if not isinstance(obj, dict):
        raise FieldError("<json>", "expected an object")
    trip = {"driver_id": _get_id(obj, "driverID", NUM_DRIVERS),
            "week_id": _get_id(obj, "weekID", NUM_WEEKDAYS),
            "time_id": _get_id(obj, "timeID", NUM_MINUTES)}
    _get_id(obj, "dateID", NUM_DATES)  # validated as the C++ does, unused by the model
    for key in ("dist", "time"):
        trip[key] = _get_number(obj, key)
        if trip[key] < 0:
            raise FieldError(key, f"{trip[key]} is negative")
    if trip["time"] == 0:  # the label divides the MAPE loss and metric
        raise FieldError("time", "must be > 0 seconds")
    kinds = {"states": "zero_or_one", "time_gap": "cumulative", "dist_gap": "cumulative"}
    for key in SEQUENCES:
        trip[key] = _get_sequence(obj, key, kinds.get(key))
        if len(trip[key]) != len(trip["lngs"]):
            raise FieldError(key, f"length {len(trip[key])} differs from lngs")
    if len(trip["lngs"]) < min_points:
        raise FieldError("lngs", f"{len(trip['lngs'])} points, fewer than {min_points}")
    return trip


def read_trips(path, min_points):
    trips = []
    try:
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                try:
                    trips.append(parse_trip(line, min_points))
                except FieldError as e:
                    raise DataError(f"{path}:{line_no}: {e}") from None
    except OSError as e:
        raise DataError(f"cannot read data file '{path}': {e.strerror}") from None
    return trips


def load_stats(path):
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except (OSError, ValueError) as e:
        raise DataError(f"cannot read stats file '{path}': {e}") from None
    stats = {}
    for key in (f"{name}_{part}" for name in STATS_KEYS for part in ("mean", "std")):
        value = obj.get(key) if isinstance(obj, dict) else None
        if not _is_number(value) or not math.isfinite(value) or (
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


def make_batch(trips, indices, stats):
    """padded_batch.cc + batch_tensors.cc: zero-padded [B, T] tensors, normalised alike."""
    rows = [trips[i] for i in indices]
    size, max_len = len(rows), max(len(t["lngs"]) for t in rows)
    seqs = {key: np.zeros((size, max_len), np.float32) for key in SEQUENCES}
    for row, trip in enumerate(rows):
        n = len(trip["lngs"])
        for key in SEQUENCES:
            values = trip[key]
            if key in ("lngs", "lats"):  # in double, then rounded to float as the C++ does
                values = (values.astype(np.float64) - stats[f"{key}_mean"]) / stats[f"{key}_std"]
            seqs[key][row, :n] = values
    batch = {key: torch.from_numpy(v) for key, v in seqs.items()}
    batch["states"] = batch["states"].long()
    for key in ("driver_id", "week_id", "time_id"):
        batch[key] = torch.tensor([t[key] for t in rows], dtype=torch.int64)
    batch["dist"] = torch.tensor(
        [(t["dist"] - stats["dist_mean"]) / stats["dist_std"] for t in rows], dtype=torch.float32)
    batch["label"] = torch.tensor([t["time"] for t in rows], dtype=torch.float32)
    batch["lengths"] = torch.tensor([len(t["lngs"]) for t in rows], dtype=torch.int64)
    return batch


def to_device(batch, device):
    """batch_tensors.cc: to a GPU through pinned memory, without waiting for the copy."""
    if device.type == "cpu":
        return batch
    return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}


# --- The model: worker/deeptte, with the same module and parameter names. ------------------

def local_path_delta(seq, k):
    return seq[:, k - 1:] - seq[:, :seq.size(1) - k + 1]


class AttrNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.driverID_em = nn.Embedding(NUM_DRIVERS, 16)
        self.weekID_em = nn.Embedding(NUM_WEEKDAYS, 3)
        self.timeID_em = nn.Embedding(NUM_MINUTES, 8)

    def forward(self, b):
        return torch.cat([self.driverID_em(b["driver_id"]), self.weekID_em(b["week_id"]),
                          self.timeID_em(b["time_id"]), b["dist"].unsqueeze(1)], 1)


class GeoConv(nn.Module):
    def __init__(self, kernel_size, num_filter):
        super().__init__()
        self.state_em = nn.Embedding(2, 2)
        self.process_coords = nn.Linear(4, 16)
        self.conv = nn.Conv1d(16, num_filter, kernel_size)

    def forward(self, b, local_dist):
        locs = torch.cat([b["lngs"].unsqueeze(2), b["lats"].unsqueeze(2),
                          self.state_em(b["states"])], 2)
        locs = torch.tanh(self.process_coords(locs)).permute(0, 2, 1)  # [B, 16, T]
        conv = F.elu(self.conv(locs)).permute(0, 2, 1)  # [B, T-k+1, F]
        return torch.cat([conv, local_dist.unsqueeze(2)], 2)


class SpatioTemporal(nn.Module):
    def __init__(self, kernel_size, num_filter, pooling):
        super().__init__()
        self.kernel_size, self.attention = kernel_size, pooling == "attention"
        self.geo_conv = GeoConv(kernel_size, num_filter)
        self.rnn = nn.LSTM(num_filter + 1 + ATTR_SIZE, HIDDEN_SIZE, num_layers=2,
                           batch_first=True)
        if self.attention:
            self.attr2atten = nn.Linear(ATTR_SIZE, HIDDEN_SIZE)

    def forward(self, b, attr, local_dist):
        """-> (hiddens [B, T', H] zero at padded steps, mask [B, T'], pooled [B, H])."""
        conv = self.geo_conv(b, local_dist)
        inputs = torch.cat([conv, attr.unsqueeze(1).expand(-1, conv.size(1), -1)], 2)
        local_lengths = b["lengths"] - (self.kernel_size - 1)
        steps = torch.arange(inputs.size(1), device=inputs.device)
        mask = steps.unsqueeze(0) < local_lengths.unsqueeze(1)
        hiddens = self.run_lstm(inputs, local_lengths).masked_fill(~mask.unsqueeze(2), 0.0)
        if self.attention:
            pooled = self.attention_pool(hiddens, mask, attr)
        else:  # padded steps are zero, so the sum covers the real steps only
            pooled = hiddens.sum(1) / local_lengths.unsqueeze(1).to(hiddens.dtype)
        return hiddens, mask, pooled

    def run_lstm(self, inputs, lengths):
        """Padded, unpacked LSTM (causal, so padding after a trip's end cannot reach its real
        steps). On the CPU large batches run sorted in groups of LSTM_GROUP, each cut to its
        longest trip, as the C++ does to keep padding cheap; on a GPU the whole batch is one
        cuDNN call, as in the C++."""
        batch, steps = inputs.shape[:2]
        if batch <= LSTM_GROUP or inputs.is_cuda:
            return self.rnn(inputs)[0]
        sorted_lengths, order = torch.sort(lengths, stable=True, descending=True)
        sorted_inputs = inputs.index_select(0, order)
        groups = []
        for start in range(0, batch, LSTM_GROUP):
            group_steps = int(sorted_lengths[start])
            h = self.rnn(sorted_inputs[start:start + LSTM_GROUP, :group_steps])[0]
            groups.append(F.pad(h, (0, 0, 0, steps - group_steps)))
        return torch.cat(groups, 0).index_select(0, torch.argsort(order))

    def attention_pool(self, hiddens, mask, attr):
        """Weights exp(-<h_t, tanh(W attr)>) normalised over the real steps only."""
        query = torch.tanh(self.attr2atten(attr)).unsqueeze(2)  # [B, H, 1]
        score = (-torch.bmm(hiddens, query).squeeze(2)).masked_fill(~mask, -math.inf)
        return torch.bmm(torch.softmax(score, 1).unsqueeze(1), hiddens).squeeze(1)


class EntireEstimator(nn.Module):
    def __init__(self, input_size, num_residual, width):
        super().__init__()
        self.input2hid = nn.Linear(input_size, width)
        self.residuals = nn.ModuleList(nn.Linear(width, width) for _ in range(num_residual))
        self.hid2out = nn.Linear(width, 1)

    def forward(self, x):
        hidden = F.leaky_relu(self.input2hid(x))
        for layer in self.residuals:
            hidden = hidden + F.leaky_relu(layer(hidden))
        return self.hid2out(hidden).squeeze(1)


class LocalEstimator(nn.Module):
    def __init__(self, input_size):
        super().__init__()
        self.input2hid = nn.Linear(input_size, 64)
        self.hid2hid = nn.Linear(64, 32)
        self.hid2out = nn.Linear(32, 1)

    def forward(self, x):
        hidden = F.leaky_relu(self.hid2hid(F.leaky_relu(self.input2hid(x))))
        return self.hid2out(hidden).squeeze(-1)


def local_path_loss(pred_s, label_s, mask):
    """Mean |pred - label| / (label + 10 s) over each trip's real local paths, then trips."""
    label = label_s.masked_fill(~mask, 0.0)  # keeps the masked terms finite in backward
    per_path = ((pred_s - label).abs() / (label + LOCAL_EPS_S)).masked_fill(~mask, 0.0)
    return (per_path.sum(1) / mask.sum(1).to(per_path.dtype)).mean()


class DeepTTE(nn.Module):
    def __init__(self, args, stats):
        super().__init__()
        self.k, self.alpha, self.stats = args.kernel_size, args.alpha, stats
        self.attr_net = AttrNet()
        self.spatio_temporal = SpatioTemporal(args.kernel_size, args.num_filter, args.pooling)
        self.entire_estimate = EntireEstimator(ATTR_SIZE + HIDDEN_SIZE, args.num_final_fcs,
                                               args.final_fc_size)
        self.local_estimate = LocalEstimator(HIDDEN_SIZE)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        """DeepTTEImpl::ResetParameters: every tensor whose name starts with "bias" (LSTM
        biases included) is zeroed; all others (embeddings, LSTM weights too) xavier-uniform."""
        for name, p in self.named_parameters():
            if name.rsplit(".", 1)[-1].startswith("bias"):
                p.zero_()
            else:
                nn.init.xavier_uniform_(p)

    def local_scale(self, per_hop):  # a local path spans kernel_size - 1 hops
        return (self.k - 1) * per_hop

    def run(self, b):
        if int(b["lengths"].min()) < self.k:
            raise ValueError("every trip needs at least kernel_size points")
        # Length of each local path in km, normalised with the per-hop statistics.
        local_dist = ((local_path_delta(b["dist_gap"], self.k)
                       - self.local_scale(self.stats["dist_gap_mean"]))
                      / self.local_scale(self.stats["dist_gap_std"]))
        attr = self.attr_net(b)
        hiddens, mask, pooled = self.spatio_temporal(b, attr, local_dist)
        return self.entire_estimate(torch.cat([attr, pooled], 1)), hiddens, mask

    def predict_seconds(self, b):
        return self.run(b)[0] * self.stats["time_std"] + self.stats["time_mean"]

    def forward(self, b):
        """The training loss, (1 - alpha) entire + alpha local, a mean over the batch's trips."""
        entire, hiddens, mask = self.run(b)
        pred = entire * self.stats["time_std"] + self.stats["time_mean"]
        loss_entire = ((pred - b["label"]).abs() / b["label"]).mean()
        # Local labels: the seconds spent on each local path, from the raw time gaps.
        label = local_path_delta(b["time_gap"], self.k)
        local_pred = (self.local_estimate(hiddens) * self.local_scale(self.stats["time_gap_std"])
                      + self.local_scale(self.stats["time_gap_mean"]))
        return ((1.0 - self.alpha) * loss_entire
                + self.alpha * local_path_loss(local_pred, label, mask))


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
