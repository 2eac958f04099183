source scripts/device-env.sh
(python3 -m penstock.cli gen tpch --sf 10 --out /tmp/tpch-sf10 > $OUT/gen.log 2>&1; touch /tmp/gen.done) &
python3 -m penstock.cli prebuild --device gpu > $OUT/prebuild.log 2>&1 &
for b in 2 3 4 6; do PENSTOCK_INTERPRETER_BLOCKS=$b python3 -c "
import penstock
from penstock.device.interpreter import interpreter_spec
db = penstock.connect(device='gpu'); db.backend.compile(interpreter_spec())" > $OUT/variant$b.log 2>&1 & done
wait
tail -2 $OUT/prebuild.log; cat $OUT/gen.log; tail -3 $OUT/variant*.log
for b in 1 2 3 4 6; do echo "== blocks $b"; PENSTOCK_INTERPRETER_BLOCKS=$b PENSTOCK_INTERPRET=always python3 scripts/interpreter_speed.py --data /tmp/tpch-sf10 --queries q06,q03,q17,q18 --runs 2 2>&1 | grep -v "run 1"; done
