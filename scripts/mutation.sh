#!/usr/bin/env bash
# Mutation testing of the modules whose numbers users read (docs/mutation.md, issue 45).
#
#   scripts/mutation.sh                       # every module below, two at a time
#   scripts/mutation.sh stats dutycycle       # only these (names of the MODULES table)
#   SURVIVORS_OF=DIR scripts/mutation.sh ...  # run again only the mutants that survived in
#                                             # DIR/<name>.sqlite (a run's $OUT), with the
#                                             # tests as they are now: the "after" column
#
# The tool is cosmic-ray (pip install -e '.[mutation]'). It rewrites the file under test in
# place, so it never runs in the work tree: each module gets its own stage
# ($STAGE/<name>, default /tmp/jvmos-mutation), a copy of the Python sources and tests laid
# out as the installed package (analyzers/ -> jvmos/analyzers, heuristic/ ->
# jvmos/heuristic), and its tests run there with PYTHONPATH=<stage>, which wins over the
# editable install's finder. Each module's test command is its own fast unit tests, -x.
#
# Operators: cosmic-ray's core set reduced to each operator's nearest alternative (as
# mutmut's and PIT's defaults are): + <-> -, * <-> /, // -> /, % -> /, ** -> *, | <-> &;
# < <-> <=, > <-> >=, == <-> !=, is <-> is not; a number n -> n + 1; and every non-binary
# operator (not added, and <-> or, unary -/not removed, loop run zero times, True <->
# False, continue -> break, decorator removed, exception replaced). The full set would be
# ~7,500 mutants here (11 binary replacements per operator), most of them bit operations
# on floats that die with a TypeError.
#
# Per module: $OUT/<name>.sqlite (the session), $OUT/<name>.txt (cr-report) and the
# one-line count in $OUT/summary.tsv (mutants, killed incl. timeouts, timeouts, survived,
# incompetent, score = killed / mutants).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
BIN="$(dirname "$PY")"
STAGE="${STAGE:-/tmp/jvmos-mutation}"
OUT="${OUT:-$STAGE/out}"
TIMEOUT="${MUTANT_TIMEOUT:-30}"
JOBS="${JOBS:-2}"

# name | file in the stage | unit tests that exercise it (those missing are left out)
MODULES=(
  "stats|jvmos/analyzers/stats.py|test_stats_calibrate.py test_stats_campaign.py test_predictions.py test_matmul_exp.py test_mutation_stats.py"
  "correction|jvmos/analyzers/correction.py|test_correction.py test_probecost.py test_mutation_correction.py"
  "summary|jvmos/analyzers/summary.py|test_summary.py test_summary_sampled.py test_negative_sums.py test_layers.py test_tables.py test_mutation_summary.py"
  "overhead|jvmos/analyzers/overhead.py|test_overhead.py test_mutation_overhead.py"
  "fit|jvmos/heuristic/fit.py|test_heuristic_fit.py test_audit_followups.py test_mutation_fit.py"
  "model|jvmos/heuristic/model.py|test_predict.py test_heuristic_fit.py test_mutation_model.py"
  "terms|jvmos/heuristic/terms.py|test_heuristic_fit.py test_mutation_terms.py"
  "theta|jvmos/heuristic/theta.py|test_theta.py test_mutation_theta.py"
  "whatif|jvmos/heuristic/whatif.py|test_whatif.py test_mutation_whatif.py"
  "constants|jvmos/heuristic/constants.py|test_heuristic_fit.py test_predict.py test_mutation_constants.py"
  "dutycycle|jvmos/dutycycle.py|test_dutycycle.py test_sampler_budget.py test_mutation_dutycycle.py"
)

stage() {   # stage DIR: the copy one module's mutants are written into
  local d="$1"
  rm -rf "$d"
  mkdir -p "$d"
  cp -r "$ROOT/jvmos" "$ROOT/tests" "$ROOT/probes" "$ROOT/scripts" "$ROOT/pyproject.toml" "$d/"
  rm -rf "$d/jvmos/analyzers" "$d/jvmos/heuristic" "$d/tests/integration"
  cp -r "$ROOT/analyzers" "$d/jvmos/analyzers"
  cp -r "$ROOT/heuristic" "$d/jvmos/heuristic"
  find "$d" -name __pycache__ -prune -exec rm -rf {} +
  # read only by the tests (committed recordings, the workloads' sources)
  ln -s "$ROOT/results" "$d/results"
  ln -s "$ROOT/workloads" "$d/workloads"
}

reduce() {  # reduce SESSION: keep the operator set described above
  "$PY" - "$1" <<'EOF'
import re, sqlite3, sys
KEEP_BIN = {("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul"), ("FloorDiv", "Div"),
            ("Mod", "Div"), ("Pow", "Mul"), ("BitOr", "BitAnd"), ("BitAnd", "BitOr")}
KEEP_CMP = {("Lt", "LtE"), ("LtE", "Lt"), ("Gt", "GtE"), ("GtE", "Gt"), ("Eq", "NotEq"),
            ("NotEq", "Eq"), ("Is", "IsNot"), ("IsNot", "Is"), ("In", "NotIn"), ("NotIn", "In")}
KEEP_UNARY = {("Delete", "Not"), ("Delete", "USub"), ("Not", "Delete")}
def keep(op, occurrence):
    op = op.split("/", 1)[1]
    m = re.fullmatch(r"Replace(BinaryOperator|ComparisonOperator|UnaryOperator)_(\w+)_(\w+)", op)
    if m:
        kind, a, b = m.groups()
        return (a, b) in {"BinaryOperator": KEEP_BIN, "ComparisonOperator": KEEP_CMP,
                          "UnaryOperator": KEEP_UNARY}[kind]
    if op == "NumberReplacer":
        return occurrence % 2 == 0          # each number's +1 (odd occurrences are its -1)
    return True
db = sqlite3.connect(sys.argv[1])
drop = [j for j, op, occ in db.execute(
    "select job_id, operator_name, occurrence from mutation_specs") if not keep(op, occ)]
db.executemany("delete from mutation_specs where job_id = ?", [(j,) for j in drop])
db.executemany("delete from work_items where job_id = ?", [(j,) for j in drop])
db.commit()
EOF
}

count() {   # count NAME SESSION: one line of summary.tsv
  "$PY" - "$1" "$2" <<'EOF'
import sqlite3, sys
name, path = sys.argv[1:]
db = sqlite3.connect(path)
n = db.execute("select count(*) from work_items").fetchone()[0]
rows = db.execute("select test_outcome, output from work_results").fetchall()
killed = sum(1 for o, _ in rows if o != "SURVIVED")
timeouts = sum(1 for o, out in rows if o == "KILLED" and out == "timeout")
survived = sum(1 for o, _ in rows if o == "SURVIVED")
incompetent = sum(1 for o, _ in rows if o == "INCOMPETENT")
pending = n - len(rows)
score = 100.0 * killed / n if n else 0.0
print(f"{name}\t{n}\t{killed}\t{timeouts}\t{survived}\t{incompetent}\t{pending}\t{score:.1f}%")
EOF
}

run_one() {
  local name="$1" file="$2" tests="$3" t testargs="" d="$STAGE/$1"
  stage "$d"
  for t in $tests; do
    # WITHOUT_NEW=1: the tests as they were before this issue (the "before" column)
    if [ -n "${WITHOUT_NEW:-}" ] && [[ $t == test_mutation_* ]]; then continue; fi
    [ -f "$d/tests/unit/$t" ] && testargs="$testargs tests/unit/$t"
  done
  cat > "$d/cr.toml" <<EOF
[cosmic-ray]
module-path = "$file"
timeout = $TIMEOUT
excluded-modules = []
test-command = "$PY -m pytest -q -x -p no:cacheprovider$testargs"

[cosmic-ray.distributor]
name = "local"
EOF
  local session="$OUT/$name.sqlite"
  rm -f "$session"
  if [ -n "${SURVIVORS_OF:-}" ]; then
    # the mutants that survived there are run again; the rest keep their result (a killed
    # mutant stays killed: tests are only ever added)
    cp "$SURVIVORS_OF/$name.sqlite" "$session"
    "$PY" -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute("delete from work_results where test_outcome = ?", ("SURVIVED",)); db.commit()' "$session"
  fi
  (
    cd "$d"
    export PYTHONPATH="$d" PYTHONDONTWRITEBYTECODE=1
    unset JVMOS_HOME
    if [ -z "${SURVIVORS_OF:-}" ]; then
      "$BIN/cosmic-ray" init cr.toml "$session"
      reduce "$session"
    fi
    "$BIN/cosmic-ray" baseline cr.toml
    nice -n 19 "$BIN/cosmic-ray" exec cr.toml "$session"
  ) > "$OUT/$name.log" 2>&1
  "$BIN/cr-report" --show-pending "$session" > "$OUT/$name.txt"
  count "$name" "$session" > "$OUT/$name.tsv"
  cat "$OUT/$name.tsv"
}

mkdir -p "$OUT"
if [ "${1:-}" = "--one" ]; then   # internal: one module, for the parallel loop below
  shift
  for entry in "${MODULES[@]}"; do
    IFS='|' read -r name file tests <<<"$entry"
    [ "$name" = "$1" ] && run_one "$name" "$file" "$tests"
  done
  exit 0
fi

names=()
for entry in "${MODULES[@]}"; do
  name="${entry%%|*}"
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  names+=("$name")
done
export STAGE OUT TIMEOUT PYTHON="$PY" SURVIVORS_OF="${SURVIVORS_OF:-}" WITHOUT_NEW="${WITHOUT_NEW:-}"
printf '%s\n' "${names[@]}" | xargs -P "$JOBS" -I{} bash "$0" --one {}
printf 'module\tmutants\tkilled\ttimeouts\tsurvived\tincompetent\tpending\tscore\n' > "$OUT/summary.tsv"
for name in "${names[@]}"; do cat "$OUT/$name.tsv" >> "$OUT/summary.tsv"; done
column -t -s $'\t' "$OUT/summary.tsv"
