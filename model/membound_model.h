/* membound_model.h — the model module's contract, all of it: one header per
 * topic, each included here. A file that needs one topic includes that
 * header alone. Needs only libc (and inih for spec files, igraph for the
 * planner). It does not run anything: kernels/ and measure/ execute what it
 * describes.
 *
 *   mb_base.h      status codes, errors, element types, sizes
 *   mb_op.h        the operations (op_table.h)
 *   mb_graph.h     the variant language, graphs, shapes
 *   mb_plan.h      plans and their kernels
 *   mb_device.h    device specs and their keys (device_keys.def)
 *   mb_traffic.h   bytes, cache-aware DRAM bytes and roofline time
 *   mb_gemm.h      a matrix multiply: FLOPs, quantization, tiled traffic, time
 *   mb_attention.h attention, standard against FlashAttention: kernels, bytes, time, memory
 *   mb_mlp.h       a transformer MLP: eager against fused epilogues, backward, checkpointing
 *   mb_planner.h   the optimal recompute plan and the frontier
 *   mb_records.h   the measurement CSV contract
 *   mb_files.h     text, CSV, trusted folders, output files
 *   mb_child.h     child processes with deadlines */
#ifndef MEMBOUND_MODEL_H
#define MEMBOUND_MODEL_H

#include "mb_base.h"
#include "mb_op.h"
#include "mb_graph.h"
#include "mb_plan.h"
#include "mb_device.h"
#include "mb_traffic.h"
#include "mb_gemm.h"
#include "mb_attention.h"
#include "mb_mlp.h"
#include "mb_planner.h"
#include "mb_records.h"
#include "mb_files.h"

#endif
