#!/usr/bin/env bash
# `harrow show --json` against its two anchors, measured in one run on this machine: reading the
# log (`cat`) and merely parsing each line with Python's `json.loads`, on generated sessions of
# 100k and 1M events. Prints each figure and the ratios the budget is stated in (at least 8×
# Python, within 4× of cat). Needs hyperfine and python3.   bash benches/show_anchors.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "show_anchors: install hyperfine (apt-get install hyperfine)" >&2; exit 2; }
cargo build --release --quiet --bin harrow --example gen-session
dir="${TMPDIR:-/tmp}/harrow-show-anchors"
mkdir -p "$dir"
cat > "$dir/parse.py" <<'PY'
import json, sys
with open(sys.argv[1], "rb") as f:
    for line in f:
        json.loads(line)
PY
for n in 100000 1000000; do
  log="$dir/$n/events.jsonl"
  [ -s "$log" ] || target/release/examples/gen-session "$n" "$dir/$n" >/dev/null
  cat "$log" >/dev/null  # a warm page cache, as the budget says
  runs=$([ "$n" -ge 1000000 ] && echo 5 || echo 15)
  hyperfine --style none --warmup 1 --runs "$runs" -N \
    --command-name cat "cat $log" \
    --command-name show "target/release/harrow show $dir/$n --json" \
    --command-name python "python3 $dir/parse.py $log" \
    --export-json "$dir/$n.json" >/dev/null
  python3 - "$dir/$n.json" "$n" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
ms = lambda k: r[k]["mean"] * 1000
print(f"{int(sys.argv[2]):>8} events: show {ms('show'):.0f} ms (user {r['show']['user']*1000:.0f}, "
      f"sys {r['show']['system']*1000:.0f}), cat {ms('cat'):.0f} ms, python {ms('python'):.0f} ms"
      f" -> {ms('python')/ms('show'):.1f}x python's speed, {ms('show')/ms('cat'):.1f}x cat's time")
PY
done
