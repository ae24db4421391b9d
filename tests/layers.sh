#!/bin/bash
# layers.sh — the house's layering rule, read from the sources: each module
# includes only its own headers and the public headers of the layers below
# it, and cli/ reaches kernels/ only through measure/ (model <- kernels <-
# measure <- calibrate <- cli; reports/ above model/ only: reports/ and
# measure/ meet only through the CSV). And the libraries read no environment variable: the CLI reads them
# and passes settings down (mb_meas_config_env, mb_meas_set_env,
# mb_variant_set_dir, mb_rpt_set_env). One line per breach, file:line; exit 1
# when there is one.
set -u
src=${MB_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
# each public header's layer
declare -A layer_of=([membound_model.h]=model [mb_child.h]=model [mb_base.h]=model [mb_op.h]=model
                     [mb_graph.h]=model [mb_plan.h]=model [mb_device.h]=model [mb_traffic.h]=model
                     [mb_planner.h]=model [mb_records.h]=model [mb_files.h]=model [kernels.h]=kernels [kernels_cuda.h]=kernels
                     [mb_ops.h]=kernels [vec_ops.h]=kernels [measure.h]=measure [meas_config.h]=measure [meas_record.h]=measure
                     [meas_timing.h]=measure [meas_run.h]=measure [meas_hostref.h]=measure [meas_admit.h]=measure
                     [meas_csv.h]=measure [meas_attn.h]=measure [calibrate.h]=calibrate [report.h]=reports
                     [import.h]=import)
# the other modules' public headers each module may include
# (import/ sits beside reports/: it writes measure's records with measure's CSV writer)
declare -A allowed=([model]="" [kernels]="model" [measure]="model kernels" [calibrate]="model kernels measure"
                    [reports]="model" [import]="model measure" [cli]="model measure calibrate reports import")
bad=0
for mod in model kernels measure calibrate reports import cli; do
    while IFS=: read -r file line text; do
        hdr=$(sed -n 's/.*#include "\([^"]*\)".*/\1/p' <<<"$text")
        other=${layer_of[$hdr]:-}
        [ -z "$other" ] || [ "$other" = "$mod" ] && continue
        case " ${allowed[$mod]} " in *" $other "*) continue ;; esac
        echo "${file#"$src"/}:$line: $mod includes $hdr ($other): layers look down, cli reaches kernels through measure"
        bad=1
    done < <(grep -Hn '#include "' "$src/$mod"/*.c "$src/$mod"/*.h "$src/$mod"/*.cu "$src/$mod"/*.cuh "$src/$mod"/*.cpp 2>/dev/null)
done
# and no kernels/ call from cli/ (a header that re-exports kernels.h would hide one)
while IFS=: read -r file line _; do
    echo "${file#"$src"/}:$line: cli calls kernels/ (mb_kern_*) directly: go through measure/"
    bad=1
done < <(grep -Hn '\bmb_kern_\|\bMB_KERN_' "$src"/cli/*.c "$src"/cli/*.h 2>/dev/null)
# a public header of measure/ or reports/ that includes a lower one than model's
for h in measure/measure.h measure/meas_*.h calibrate/calibrate.h reports/report.h; do
    if grep -n '#include "kernels' "$src/$h" >/dev/null; then
        echo "$h: re-exports kernels.h to its users: declare what they need instead"
        bad=1
    fi
done
# no getenv in a library (comments aside)
while IFS=: read -r file line text; do
    case "$text" in *'/*'*getenv*|' *'*|*'* '*getenv*) continue ;; esac
    echo "${file#"$src"/}:$line: a library reads the environment: take it as a setting from the CLI"
    bad=1
done < <(grep -Hn '\bgetenv *(' "$src"/model/*.c "$src"/kernels/*.c "$src"/kernels/*.cu "$src"/measure/*.c \
         "$src"/measure/*.cu "$src"/measure/*.cpp "$src"/calibrate/*.c "$src"/reports/*.c "$src"/import/*.c 2>/dev/null)
# within model/: plan.c (the groupings) calls nothing of the files built on
# it (plan_optimal.c chooses a saved set and builds it through plan.c;
# plan_build.c dispatches on the kind): no call circle between them
for upper in plan_optimal.c plan_build.c; do
    [ -f "$src/model/$upper" ] || continue
    for fn in $(sed -n 's/^[a-z][a-z0-9_ ]* \**\(mb_[a-z0-9_]*\)(.*/\1/p' "$src/model/$upper"); do
        if grep -n "\b$fn *(" "$src/model/plan.c" >/dev/null; then
            echo "model/plan.c calls $fn (model/$upper): the plan files call one way only"
            bad=1
        fi
    done
done
[ $bad = 0 ] && echo "layers: ok"
exit $bad
