#!/usr/bin/env bash
# Ingest speed, every reader side by side (docs/development.md, "Benchmarks"):
# the same curves, STEPS steps x 8 metrics (default 1,000,000), written in
# each format a team may bring, read by `lockstep import` (best of 5, wall
# time with that run's user and system time: bench/timing.sh), and printed as values per second and as a ratio to the JSONL
# reader's rate (goal: every other reader >= 0.5). Also, against their goals:
#   JSONL import in MB/s (goal >= 250);
#   TensorBoard read_metrics against libprotobuf's own parse (goal >= 0.5);
#   MLflow's tracking database, 1,000,000 metric rows (goal <= 1 s);
#   `lockstep compare` of two records with the series inline (goal <= 1 s);
#   the system time of the JSONL import and the compare per 100 MB of input
#   (goal <= 0.2 s: fresh memory and page faults cost more on some VMs).
# Builds without LibTorch into build-bench/ (LOCKSTEP_BENCH_BUILD names another).
#   bench/ingest.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-1000000}"
build="${LOCKSTEP_BENCH_BUILD:-build-bench}"
cmake -S . -B "$build" -G Ninja -DLOCKSTEP_WITH_TORCH=OFF -DLOCKSTEP_BUILD_BENCH=ON >/dev/null
ninja -C "$build" -j2 lockstep tensorboard_read >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-ingest-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work" "$steps" <<'PY'
import json, math, os, sqlite3, sys
work, steps = sys.argv[1], int(sys.argv[2])
keys = ["loss", "grad_norm", "lr", "param_norm", "loss_scale", "accuracy", "tokens_per_s", "weight_decay"]
def value(s, k):
    return (k + 1) * (1.0 + 1.0 / (1.0 + s)) + 1e-3 * math.sin(12.9898 * s + k)
cols = [[value(s, k) for s in range(steps)] for k in range(len(keys))]
with open(f"{work}/m.jsonl", "w") as f:
    for s in range(steps):
        f.write(json.dumps(dict([("step", s)] + [(keys[k], cols[k][s]) for k in range(len(keys))])) + "\n")
with open(f"{work}/m.csv", "w") as f:
    f.write("step," + ",".join(keys) + "\n")
    for s in range(steps):
        f.write(str(s) + "," + ",".join(repr(cols[k][s]) for k in range(len(keys))) + "\n")
with open(f"{work}/loss.txt", "w") as f:  # torchtitan: one series
    for s in range(steps):
        f.write(f"{s} {cols[0][s]!r}\n")
with open(f"{work}/golden_values_dev_dgx_h100.json", "w") as f:
    json.dump({k: {"start_step": 0, "end_step": steps - 1, "step_interval": 1,
                   "values": {str(s): cols[i][s] for s in range(steps)}} for i, k in enumerate(keys)}, f)
with open(f"{work}/trainer_state.json", "w") as f:
    json.dump({"global_step": steps, "log_history": [dict([("step", s)] + [(keys[k], cols[k][s]) for k in range(len(keys))])
                                                     for s in range(steps)]}, f)
# MLflow: 1,000,000 metric rows (steps/8 steps x 8 keys), the SQLAlchemy store's schema.
db = sqlite3.connect(f"{work}/mlflow.db")
db.executescript("""
CREATE TABLE runs (run_uuid VARCHAR(32) PRIMARY KEY, name VARCHAR(250));
CREATE TABLE metrics (key VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT NOT NULL,
  run_uuid VARCHAR(32) NOT NULL, step BIGINT DEFAULT '0' NOT NULL, is_nan BOOLEAN DEFAULT '0' NOT NULL,
  CONSTRAINT metric_pk PRIMARY KEY (key, timestamp, step, run_uuid, value, is_nan));
CREATE INDEX index_metrics_run_uuid ON metrics (run_uuid);
INSERT INTO runs VALUES ('6f1c0a', 'bench');""")
rows = steps // 8
db.executemany("INSERT INTO metrics VALUES (?, ?, ?, '6f1c0a', ?, 0)",
               ((keys[k], cols[k][s], 1700000000000 + s, s) for k in range(len(keys)) for s in range(rows)))
db.commit()
os.makedirs(f"{work}/mlruns/0/6f1c0a/metrics", exist_ok=True)
for k, key in enumerate(keys):
    with open(f"{work}/mlruns/0/6f1c0a/metrics/{key}", "w") as f:
        for s in range(steps):
            f.write(f"{1700000000000 + s} {cols[k][s]!r} {s}\n")
# Two records with the series inline in the JSON, for compare.
def record(jitter):
    return {"schema": "lockstep.run/1", "smoke": "bench", "config_hash": "0" * 16,
            "seed": {"base": 1, "overridden": False}, "device": "cpu", "platform": "cpu-x86_64-avx2",
            "steps": steps, "contract": {}, "hashes": {}, "probes": [], "train_probes": [],
            "fingerprint": {"torch.version": {"value": "2.11.0" if jitter else "1.13.0", "relevant": True}},
            "series": {key: {"dtype": "float64", "values": [v * (1 + jitter) for v in cols[k]]} for k, key in enumerate(keys)}}
for name, jitter in (("golden", 0.0), ("run", 1e-9)):
    json.dump(record(jitter), open(f"{work}/{name}.json", "w"))
PY

mkdir -p "$work/tb"
"$build/bench/tensorboard_read" generate "$work/tb" "$steps" 8 >/dev/null

series="--series loss=loss --series grad_norm=grad_norm --series lr=lr --series param_norm=param_norm \
--series loss_scale=loss_scale --series accuracy=accuracy --series tokens_per_s=tokens_per_s --series weight_decay=weight_decay"
source bench/timing.sh
bin="$build/lockstep"
declare -A seconds values cpu
run_reader() {  # NAME VALUES ARGS...
  local name=$1 n=$2
  shift 2
  best_of 5 "$bin" import "$@" --record "$work/$name.record.json"
  seconds[$name]=$BEST_WALL values[$name]=$n cpu[$name]="$BEST_USER $BEST_SYS"
}
run_reader jsonl $((steps * 8)) jsonl "$work/m.jsonl" $series
run_reader csv $((steps * 8)) csv "$work/m.csv" $series
run_reader tensorboard $((steps * 8)) tensorboard "$work/tb" \
  --series loss=train/loss --series grad_norm=train/grad_norm --series lr=train/lr --series param_norm=train/param_norm \
  --series loss_scale=train/loss_scale --series accuracy=train/accuracy --series tokens_per_s=train/tokens_per_s \
  --series weight_decay=train/weight_decay
run_reader megatron $((steps * 8)) megatron "$work/golden_values_dev_dgx_h100.json" $series
run_reader torchtitan "$steps" torchtitan "$work/loss.txt" --series loss=loss
run_reader hf-trainer $((steps * 8)) hf-trainer "$work/trainer_state.json" $series
run_reader mlflow-db $(((steps / 8) * 8)) mlflow "$work/mlflow.db" $series
run_reader mlflow-files $((steps * 8)) mlflow "$work/mlruns/0/6f1c0a" $series
best_of 5 "$bin" compare "$work/run.json" "$work/golden.json"
compare="$BEST_WALL $BEST_USER $BEST_SYS"

jsonl_bytes=$(stat -c %s "$work/m.jsonl")
compare_bytes=$(( $(stat -c %s "$work/run.json") + $(stat -c %s "$work/golden.json") ))
tb_line=$("$build/bench/tensorboard_read" time "$work/tb" 8 3 | grep "ratio read/protobuf")
args=()
for n in jsonl csv tensorboard megatron torchtitan hf-trainer mlflow-db mlflow-files; do
  args+=("${seconds[$n]}" "${values[$n]}" "${cpu[$n]}")
done
/usr/bin/python3 - "$steps" "$jsonl_bytes" "$compare_bytes" "$compare" "$tb_line" "$(cut -d' ' -f1-3 /proc/loadavg)" "${args[@]}" <<'PY'
import sys
steps, jsonl_bytes, compare_bytes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
compare_s, compare_u, compare_sys = map(float, sys.argv[4].split())
tb_line, load = sys.argv[5], sys.argv[6]
names = ["jsonl", "csv", "tensorboard", "megatron", "torchtitan", "hf-trainer", "mlflow-db", "mlflow-files"]
rest = sys.argv[7:]
sec = {n: float(rest[3 * i]) for i, n in enumerate(names)}
rate = {n: int(rest[3 * i + 1]) / sec[n] for i, n in enumerate(names)}
cpu = {n: tuple(map(float, rest[3 * i + 2].split())) for i, n in enumerate(names)}
print(f"ingest: {steps} steps x 8 metrics; `lockstep import`, best of 5 (wall, with that run's user + sys); load {load}")
for n in names:
    ratio = rate[n] / rate["jsonl"]
    goal = "" if n == "jsonl" else ("   (goal >= 0.5: met)" if ratio >= 0.5 else "   (goal >= 0.5: NOT met)")
    print(f"  {n:13s} {sec[n]:7.3f} s ({cpu[n][0]:.2f} user + {cpu[n][1]:.2f} sys)  {rate[n] / 1e6:6.2f} M values/s  "
          f"ratio to jsonl {ratio:.2f}{goal}")
per100 = lambda s, b: s / (b / 1e8)
print(f"jsonl import:           {jsonl_bytes / sec['jsonl'] / 1e6:.0f} MB/s of {jsonl_bytes / 1e6:.0f} MB   (goal >= 250); "
      f"sys {per100(cpu['jsonl'][1], jsonl_bytes):.2f} s per 100 MB (goal <= 0.2)")
print(f"mlflow database:        {sec['mlflow-db']:.3f} s for {steps // 8 * 8} metric rows   (goal <= 1 s for 1,000,000)")
print(f"tensorboard:            {tb_line.split(':', 1)[1].strip()}")
print(f"compare, series inline: {compare_s:.3f} s ({compare_u:.2f} user + {compare_sys:.2f} sys) for two records of "
      f"{steps} x 8, {compare_bytes / 1e6:.0f} MB   (goal <= 1 s); sys {per100(compare_sys, compare_bytes):.2f} s per "
      f"100 MB (goal <= 0.2)")
PY
