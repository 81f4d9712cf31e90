#!/usr/bin/env python3
"""Travel-time estimates from a tteps model.pt, in PyTorch, for routes not yet driven.

Self-contained (PyTorch and the standard library): copy this file anywhere.

    python3 tteps_predict.py --model model.pt --data routes.jsonl [--out FILE]
        [--bad_records fail|skip] [--batch_size N]

Trips are JSON lines in tteps' format (data/chengdu/README.md); `time`, `time_gap` and `dateID`
may be absent (an estimate does not read them) and are checked when present. Each trip gives
one line {"line": N, "estimate_s": X}, N its line number from 1, with "id": V after N when the
trip has an "id" (a string or an integer). A bad record ends the script with status 1 and
"FILE:LINE: field 'NAME': reason" (an --out file is then removed); --bad_records skip skips and
counts it. stderr reports the trips, seconds and trips/s.

In Python:

    model = tteps_predict.load("model.pt")  # tteps' DeepTTE, parameter for parameter
    seconds = tteps_predict.estimate(model, trips)  # trips: dicts or JSON lines, in order

bench/baselines/deeptte_ddp.py trains this model with DistributedDataParallel.
"""
import argparse
import itertools
import json
import math
import operator
import os
import stat
import sys
import time
import types
from array import array

import torch
import torch.nn.functional as F
from torch import nn

FORMAT_PREFIX = "tteps.deeptte.v"
FORMAT = FORMAT_PREFIX + "1"  # model.pt's "format" key (common/file_formats.h: kModelFileFormat)
# model/data/trip.h and model/deeptte/model_config.h.
NUM_DRIVERS, NUM_DATES, NUM_WEEKDAYS, NUM_MINUTES = 24000, 31, 7, 1440
ATTR_SIZE = 16 + 3 + 8 + 1  # three embeddings + normalised distance
HIDDEN_SIZE = 128
LSTM_GROUP = 64  # spatio_temporal.cc: trips per LSTM call in large batches
LOCAL_EPS_S = 10.0  # deeptte.cc: added to the local label in the local loss
STATS_KEYS = ("dist", "time", "lngs", "lats", "time_gap", "dist_gap")
SEQUENCES = ("lngs", "lats", "states", "time_gap", "dist_gap")
TRAINING_ONLY = ("time", "time_gap", "dateID")  # fields an estimate does not read


# --- Trips: trip_parser.cc, padded_batch.cc and batch_tensors.cc. ---------------------------

class DataError(Exception):
    """A bad data file or record; the message names the file and line (or the trip)."""


class FieldError(Exception):
    def __init__(self, field, reason):
        super().__init__(f"field '{field}': {reason}")


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _get_number(obj, key):
    if key not in obj:
        raise FieldError(key, "missing")
    v = obj[key]
    if not is_number(v) or not math.isfinite(v):
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
    bad = next((i for i, v in enumerate(seq) if not is_number(v)), None)
    if bad is not None:
        raise FieldError(key, f"element {bad} is not a number")
    as_float = array("f", seq)  # the C++ keeps per-point values as floats
    # Each check maps the points to pass/fail, in order: the first check that fails is named.
    checks = [(map(math.isfinite, as_float), "is not finite as a float")]
    if kind == "zero_or_one":
        checks.append((map({0, 1}.__contains__, seq), "is not 0 or 1"))
    if kind == "cumulative":
        checks += [(map(operator.le, itertools.repeat(0), seq), "is negative"),
                   (itertools.chain([True], map(operator.le, as_float, as_float[1:])),
                    "is below the previous one")]
    for passes, reason in checks:
        passes = list(passes)
        if not all(passes):
            i = passes.index(False)
            raise FieldError(key, f"element {i} ({float(seq[i])}) {reason}")
    return as_float


def as_record(trip):
    """A JSON line (str or bytes) or a decoded one -> its dict; FieldError '<json>' if neither."""
    if isinstance(trip, (str, bytes)):
        try:
            trip = json.loads(trip)
        except ValueError as e:
            raise FieldError("<json>", str(e)) from None
    if not isinstance(trip, dict):
        raise FieldError("<json>", "expected an object")
    return trip


def parse_record(obj, min_points, labels=True):
    """A decoded trip -> the fields the model uses, checked as the C++ reader checks them
    (FieldError names a bad field). labels=False: the TRAINING_ONLY fields may be absent; when
    present they are checked, and not kept."""
    def wanted(key):
        return labels or key not in TRAINING_ONLY or key in obj

    trip = {"driver_id": _get_id(obj, "driverID", NUM_DRIVERS),
            "week_id": _get_id(obj, "weekID", NUM_WEEKDAYS),
            "time_id": _get_id(obj, "timeID", NUM_MINUTES)}
    if wanted("dateID"):
        _get_id(obj, "dateID", NUM_DATES)  # validated as the C++ does, unused by the model
    for key in filter(wanted, ("dist", "time")):
        trip[key] = _get_number(obj, key)
        if trip[key] < 0:
            raise FieldError(key, f"{trip[key]} is negative")
    if trip.get("time") == 0:  # the label divides the MAPE loss and metric
        raise FieldError("time", "must be > 0 seconds")
    kinds = {"states": "zero_or_one", "time_gap": "cumulative", "dist_gap": "cumulative"}
    for key in filter(wanted, SEQUENCES):
        trip[key] = _get_sequence(obj, key, kinds.get(key))
        if len(trip[key]) != len(trip["lngs"]):
            raise FieldError(key, f"length {len(trip[key])} differs from lngs")
    if len(trip["lngs"]) < min_points:
        raise FieldError("lngs", f"{len(trip['lngs'])} points, fewer than {min_points}")
    if not labels:
        for key in TRAINING_ONLY:
            trip.pop(key, None)
    return trip


def read_records(path, parse, on_bad=None):
    """(line number, parse(decoded line)) for each line of a JSON-lines file. A bad line raises
    DataError "FILE:LINE: field 'NAME': reason", or with on_bad calls on_bad(LINE, "field ...")."""
    try:
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                try:
                    result = parse(as_record(line))
                except FieldError as e:
                    if on_bad is None:
                        raise DataError(f"{path}:{line_no}: {e}") from None
                    on_bad(line_no, str(e))
                    continue
                yield line_no, result
    except OSError as e:
        raise DataError(f"cannot read data file '{path}': {e.strerror}") from None


def read_trips(path, min_points):
    """Every trip of a JSON-lines file, labels included; the first bad one raises DataError."""
    return [trip for _, trip in read_records(path, lambda obj: parse_record(obj, min_points))]


def make_batch(trips, indices, stats):
    """padded_batch.cc + batch_tensors.cc: zero-padded [B, T] tensors, normalised alike; the
    labels (`label`, `time_gap`) when the trips have them."""
    rows = [trips[i] for i in indices]
    lengths = torch.tensor([len(t["lngs"]) for t in rows], dtype=torch.int64)
    real = torch.arange(int(lengths.max())) < lengths.unsqueeze(1)  # [B, T], row by row
    batch = {}
    for key in (key for key in SEQUENCES if key in rows[0]):
        flat = array("f")
        for trip in rows:
            flat.extend(trip[key])
        values = torch.frombuffer(flat, dtype=torch.float32)
        if key in ("lngs", "lats"):  # in double, then rounded to float as the C++ does
            values = ((values.double() - stats[f"{key}_mean"]) / stats[f"{key}_std"]).float()
        batch[key] = torch.zeros(real.shape, dtype=torch.float32).masked_scatter_(real, values)
    batch["states"] = batch["states"].long()
    for key in ("driver_id", "week_id", "time_id"):
        batch[key] = torch.tensor([t[key] for t in rows], dtype=torch.int64)
    batch["dist"] = torch.tensor(
        [(t["dist"] - stats["dist_mean"]) / stats["dist_std"] for t in rows], dtype=torch.float32)
    if "time" in rows[0]:
        batch["label"] = torch.tensor([t["time"] for t in rows], dtype=torch.float32)
    batch["lengths"] = lengths
    return batch


# --- The model: model/deeptte, with the same module and parameter names. ------------------

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


# --- Estimates. -----------------------------------------------------------------------------

def load(path):
    """The DeepTTE of a tteps model.pt, on the CPU, in eval mode. model.k is its kernel size
    (the fewest points a trip may have) and model.stats its normalisation statistics."""
    archive = torch.jit.load(path, map_location="cpu")

    def value(key):  # the keys hold dots, which attribute access cannot name
        return archive._c.getattr(key)

    fmt = value("format")
    if fmt != FORMAT:
        if isinstance(fmt, str) and fmt.startswith(FORMAT_PREFIX):
            raise ValueError(f"{path} is a tteps model of format version "
                             f"{fmt[len(FORMAT_PREFIX):]} ({fmt}); this tool reads version "
                             f"{FORMAT[len(FORMAT_PREFIX):]} (docs/compatibility.md)")
        raise ValueError(f"{path}: not a tteps model (format {fmt!r})")
    config = types.SimpleNamespace(**{key: value(f"config.{key}") for key in (
        "kernel_size", "num_filter", "pooling", "alpha", "num_final_fcs", "final_fc_size")})
    stats = {f"{name}_{part}": float(value(f"stats.{name}_{part}"))
             for name in STATS_KEYS for part in ("mean", "std")}
    model = DeepTTE(config, stats)
    weights = dict(archive.weights.named_parameters())
    weights.update(archive.weights.named_buffers())
    model.load_state_dict(weights, strict=True)
    return model.eval()


def estimate_parsed(model, trips):
    """Seconds for each trip of parse_record(..., labels=False), as one batch."""
    with torch.inference_mode():
        return model.predict_seconds(make_batch(trips, range(len(trips)), model.stats)).tolist()


def estimate(model, trips, batch_size=256):
    """Seconds for each trip, in order. A trip is a dict (a decoded line of a data file) or a
    JSON line; a bad one raises DataError "trip I: field 'NAME': reason" (I from 0)."""
    parsed = []
    for i, trip in enumerate(trips):
        try:
            parsed.append(parse_record(as_record(trip), model.k, labels=False))
        except FieldError as e:
            raise DataError(f"trip {i}: {e}") from None
    return [seconds for start in range(0, len(parsed), batch_size)
            for seconds in estimate_parsed(model, parsed[start:start + batch_size])]


def _parse_route(obj, min_points):
    trip = parse_record(obj, min_points, labels=False)
    if "id" in obj:
        trip_id = obj["id"]
        if isinstance(trip_id, bool) or not isinstance(trip_id, (str, int)):
            raise FieldError("id", f"expected a string or an integer, got "
                                   f"{json.dumps(trip_id)[:40]}")
        trip["id"] = trip_id
    return trip


class _Skipped:
    """Bad records skipped: how many, and the first ten (as tteps' reader reports them)."""

    def __init__(self):
        self.count, self.first = 0, []

    def __call__(self, line, reason):
        self.count += 1
        if len(self.first) < 10:
            self.first.append((line, reason))

    def summary(self):
        lines = ", ".join(str(line) for line, _ in self.first)
        more = f" and {self.count - len(self.first)} more" if self.count > len(self.first) else ""
        return (f"{self.count} bad record{'s' * (self.count != 1)} skipped "
                f"(line{'s' * (len(self.first) != 1)} {lines}{more}; first: {self.first[0][1]})")


def write_estimates(model, path, out, batch_size=256, on_bad=None):
    """Writes one JSON line per trip of the file at path to out; returns the number of trips.
    on_bad as for read_records."""
    n = 0
    records = read_records(path, lambda obj: _parse_route(obj, model.k), on_bad)
    while chunk := list(itertools.islice(records, batch_size)):
        seconds = estimate_parsed(model, [trip for _, trip in chunk])
        out.write("".join(
            json.dumps({"line": line, **({"id": trip["id"]} if "id" in trip else {}),
                        "estimate_s": s}, separators=(",", ":")) + "\n"
            for (line, trip), s in zip(chunk, seconds)))
        n += len(chunk)
    return n


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a tteps model.pt")
    p.add_argument("--data", required=True, help="trips, JSON lines")
    p.add_argument("--out", default="", help="where to write the estimates (default: stdout)")
    p.add_argument("--bad_records", choices=("fail", "skip"), default="fail",
                   help="a malformed record: fail (exit status 1) or skip (counted on stderr)")
    p.add_argument("--batch_size", type=int, default=256, help="trips per batch")
    args = p.parse_args(argv)
    if args.batch_size < 1:
        p.error("--batch_size must be >= 1")
    try:
        model = load(args.model)
    except (OSError, RuntimeError, ValueError) as e:
        sys.exit(f"tteps_predict: cannot load model '{args.model}': {e}")
    skipped = _Skipped() if args.bad_records == "skip" else None
    # After a failure only a regular file is removed (never /dev/stdout or the like).
    out_is_file = args.out and (not os.path.lexists(args.out)
                                or stat.S_ISREG(os.lstat(args.out).st_mode))
    start = time.perf_counter()
    try:
        out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
        try:
            n = write_estimates(model, args.data, out, args.batch_size, skipped)
            out.flush()
        finally:
            if args.out:
                out.close()
    except (DataError, OSError) as e:
        if out_is_file and os.path.exists(args.out):
            os.remove(args.out)
        sys.exit(f"tteps_predict: {e}" if isinstance(e, DataError)
                 else f"tteps_predict: cannot write '{args.out or 'stdout'}': {e.strerror}")
    elapsed = time.perf_counter() - start
    if skipped is not None and skipped.count:
        print(f"tteps_predict: {args.data}: {skipped.summary()}", file=sys.stderr)
    print(f"tteps_predict: {n} trips in {elapsed:.3f} s, {n / elapsed if elapsed else 0:.1f} "
          "trips/s", file=sys.stderr)


if __name__ == "__main__":
    main()
