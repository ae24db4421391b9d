/* op_table.h — every operation the graph can hold, one row each: the one list
 * that the model, the executors, the CUDA kernels, the reference and
 * calibration walk (an X-macro: each reader defines X to take what it needs).
 * Adding an op is a row here, its per-element math in op_math.h and, where the
 * row says it has one, its vector form in kernels/vec_ops.h; tests/op_table.c
 * walks every row through every form and fails on one that is missing.
 * It does not define the math (op_math.h) or the enum's users' logic.
 *
 * X(E, name, arity, kind, spell, flops, sfu, cls, der, dop, saves, vform, flags, weight,
 *   probe_pre, probe_post, mag, bwd)
 *   E        enum suffix: MB_OP_<E>
 *   name     the spelling (language function, CSV, INI key op_<name>_geps)
 *   arity    1 or 2 operands
 *   kind     MB_OPK_MAP (elementwise primitive), MB_OPK_LIBRARY (a library op,
 *            as F.gelu or F.softmax: one kernel of its own in eager),
 *            MB_OPK_REDUCTION (sum, mean, amax over the last dimension: a
 *            [rows, 1] or [rows] result), MB_OPK_COLUMN (colsum, a sum over
 *            the rows: a [cols] result; in a kernel of its own in every plan,
 *            run by the row executor's column loop, kernels/rows_cols_cpu.c)
 *   spell    MB_SPELL_CALL (`name(x)` in the language), MB_SPELL_OPERATOR
 *            (+ - * / ** and unary minus), MB_SPELL_NONE (made by the parser or
 *            by autodiff only)
 *   flops, sfu  per-element cost for the roofline's compute side (GPU
 *            assumptions: FP32 instructions and SFU/MUFU ops; measured op rates
 *            replace them on a calibrated spec); pow by a constant is costed
 *            by graph.c's exponent rule
 *   cls      MB_COST_ARITH (the reports' fits pool these in one column) or
 *            MB_COST_SFU (one fit column each)
 *   der      derivative rule (autodiff.c): MB_DER_CODE (written there),
 *            MB_DER_G_OP_X (g * dop(x)), MB_DER_G_OP_Y (g * dop(out)),
 *            MB_DER_G_Y (g * out), MB_DER_G_DIV_X (g / x), MB_DER_PASS (g),
 *            MB_DER_NONE (autodiff's own helpers: never differentiated)
 *   dop      the helper op of G_OP_X / G_OP_Y (enum suffix), else INPUT
 *   saves    what the derivative reads of the forward pass: MB_SAVES_NONE,
 *            MB_SAVES_X (operands), MB_SAVES_Y (output), MB_SAVES_XY; tests
 *            check it against the backward graph autodiff builds
 *   vform    vector form in kernels/vec_ops.h (a macro of arity operands), or
 *            MB_V_NONE
 *   flags    MB_OPF_VEC: the interpreter's tile primitive uses vform (else a
 *            scalar loop the compiler vectorises); MB_OPF_JIT: compiled
 *            kernels use vform; MB_OPF_POSITIVE: needs positive operands
 *            (test inputs); MB_OPF_POW: pow's exponent rules, in code;
 *            MB_OPF_ROW: a row operation over the last dimension (the
 *            reductions, softmax, log_softmax, layer_norm, rms_norm): no
 *            per-element form, the row executor (kernels/rows_cpu.c) and the
 *            traffic rule's passes (model/passes.c) handle it; its flops and
 *            sfu are per element of the row it reads
 *   weight   weight in a compiled kernel's dependent chain (jit_cpu.c): 1 per
 *            SLEEF call, 2 for a call and a division or two calls, 0 arithmetic
 *   probe_pre, probe_post  calibration's compiled chain, one link
 *            "pre <previous> post" (NULL: no chain; the op rate probe through
 *            the tile primitive covers every row). neg has none: -(-x) is x
 *            exactly, so the compiler turns a chain of negs into a copy
 *            (calibrate/ops.c gives it the compiled add's rate)
 *   mag      magnitude rule of the float64 reference's error bound
 *            (reference.c): MB_MAG_SUM, MB_MAG_PROD, MB_MAG_QUOT, MB_MAG_PASS,
 *            MB_MAG_VALUE
 *   bwd      the eager backward's kernels, as PyTorch's derivative formula
 *            for the op launches them (torch 1.13, derivatives.yaml): the
 *            name of its one fused backward kernel ("sigmoid_backward": the
 *            op's backward nodes are one kernel), or NULL: composite, every
 *            backward node its own kernel (cos: sin, neg, mul), in the order
 *            autodiff.c builds them. The row ops' rules (autodiff.c) as torch
 *            1.13's profiler shows their backward on the CPU: sum an expand
 *            (a view; a copy only where it is an input's gradient), mean one
 *            div, amax four (eq, sum, div, mul: ties share the gradient
 *            evenly, scale_grad_by_count), softmax, log_softmax and
 *            layer_norm one kernel each (_softmax_backward_data,
 *            _log_softmax_backward_data, native_layer_norm_backward);
 *            rms_norm, which torch 1.13 lacks, one kernel as a fused RMSNorm;
 *            a norm with a [cols] weight or bias a second kernel for their
 *            gradients, as CUDA's GammaBetaBackward (MB_KERNEL_GAMMA_BETA)
 *
 * Order: the enum follows the rows (MB_OP_INPUT = 0 first); a cached spec
 * names ops by spelling, so rows may be inserted anywhere. */
#ifndef MB_OP_TABLE_H
#define MB_OP_TABLE_H

/* clang-format off */
#define MB_OP_TABLE(X)                                                                                 \
    X(ADD, "add", 2, MB_OPK_MAP, MB_SPELL_OPERATOR, 1, 0, MB_COST_ARITH, MB_DER_CODE, INPUT,            \
      MB_SAVES_NONE, V_ADD, MB_OPF_JIT, 0, "(", " + x)", MB_MAG_SUM, NULL)                                    \
    X(SUB, "sub", 2, MB_OPK_MAP, MB_SPELL_OPERATOR, 1, 0, MB_COST_ARITH, MB_DER_CODE, INPUT,            \
      MB_SAVES_NONE, V_SUB, MB_OPF_JIT, 0, "(", " - x)", MB_MAG_SUM, NULL)                                    \
    X(MUL, "mul", 2, MB_OPK_MAP, MB_SPELL_OPERATOR, 1, 0, MB_COST_ARITH, MB_DER_CODE, INPUT,            \
      MB_SAVES_X, V_MUL, MB_OPF_JIT, 0, "(", " * x)", MB_MAG_PROD, NULL)                                      \
    /* rcp + 2 FMA refinement */                                                                       \
    X(DIV, "div", 2, MB_OPK_MAP, MB_SPELL_OPERATOR, 2, 1, MB_COST_SFU, MB_DER_CODE, INPUT,              \
      MB_SAVES_X, V_DIV, MB_OPF_JIT | MB_OPF_POSITIVE, 0, "(", " / x)", MB_MAG_QUOT, NULL)                    \
    /* general case: lg2, mul, ex2 */                                                                  \
    X(POW, "pow", 2, MB_OPK_MAP, MB_SPELL_OPERATOR, 2, 2, MB_COST_ARITH, MB_DER_CODE, INPUT,            \
      MB_SAVES_XY, V_POW, MB_OPF_POW, 0, NULL, NULL, MB_MAG_VALUE, NULL)                                      \
    X(NEG, "neg", 1, MB_OPK_MAP, MB_SPELL_OPERATOR, 1, 0, MB_COST_ARITH, MB_DER_CODE, INPUT,            \
      MB_SAVES_NONE, MB_V_NEG, MB_OPF_JIT, 0, NULL, NULL, MB_MAG_PASS, NULL)                                  \
    X(SIN, "sin", 1, MB_OPK_MAP, MB_SPELL_CALL, 4, 1, MB_COST_SFU, MB_DER_G_OP_X, COS,                  \
      MB_SAVES_X, V_SIN, MB_OPF_VEC | MB_OPF_JIT, 1, "sin(", ")", MB_MAG_VALUE, NULL)                         \
    X(COS, "cos", 1, MB_OPK_MAP, MB_SPELL_CALL, 4, 1, MB_COST_SFU, MB_DER_CODE, INPUT,                  \
      MB_SAVES_X, V_COS, MB_OPF_VEC | MB_OPF_JIT, 1, "cos(", ")", MB_MAG_VALUE, NULL)                         \
    X(TAN, "tan", 1, MB_OPK_MAP, MB_SPELL_CALL, 6, 3, MB_COST_SFU, MB_DER_CODE, INPUT,                  \
      MB_SAVES_Y, V_TAN, MB_OPF_VEC | MB_OPF_JIT, 2, "tan(", ")", MB_MAG_VALUE, NULL)                         \
    X(TANH, "tanh", 1, MB_OPK_MAP, MB_SPELL_CALL, 2, 1, MB_COST_SFU, MB_DER_CODE, INPUT,                \
      MB_SAVES_Y, V_TANH, MB_OPF_VEC | MB_OPF_JIT, 2, "tanh(", ")", MB_MAG_VALUE, "tanh_backward")                       \
    X(EXP, "exp", 1, MB_OPK_MAP, MB_SPELL_CALL, 2, 1, MB_COST_SFU, MB_DER_G_Y, INPUT,                   \
      MB_SAVES_Y, V_EXP, MB_OPF_VEC | MB_OPF_JIT, 1, "exp(", ")", MB_MAG_VALUE, NULL)                         \
    X(LOG, "log", 1, MB_OPK_MAP, MB_SPELL_CALL, 2, 1, MB_COST_SFU, MB_DER_G_DIV_X, INPUT,               \
      MB_SAVES_X, V_LOG, MB_OPF_VEC | MB_OPF_JIT | MB_OPF_POSITIVE, 1, "log(", ")", MB_MAG_VALUE, NULL)       \
    X(SQRT, "sqrt", 1, MB_OPK_MAP, MB_SPELL_CALL, 1, 1, MB_COST_SFU, MB_DER_CODE, INPUT,                \
      MB_SAVES_Y, V_SQRT, MB_OPF_VEC | MB_OPF_JIT | MB_OPF_POSITIVE, 0, "sqrt(", ")", MB_MAG_VALUE, NULL)     \
    X(RSQRT, "rsqrt", 1, MB_OPK_MAP, MB_SPELL_CALL, 0, 1, MB_COST_SFU, MB_DER_CODE, INPUT,              \
      MB_SAVES_Y, MB_V_RSQRT, MB_OPF_VEC | MB_OPF_JIT | MB_OPF_POSITIVE, 0, "rsqrt(", ")", MB_MAG_VALUE, NULL) \
    /* ex2 + rcp */                                                                                    \
    X(SIGMOID, "sigmoid", 1, MB_OPK_MAP, MB_SPELL_CALL, 3, 2, MB_COST_SFU, MB_DER_CODE, INPUT,          \
      MB_SAVES_Y, MB_V_SIGMOID, MB_OPF_VEC | MB_OPF_JIT, 2, "sigmoid(", ")", MB_MAG_VALUE, "sigmoid_backward")              \
    X(RELU, "relu", 1, MB_OPK_MAP, MB_SPELL_CALL, 1, 0, MB_COST_ARITH, MB_DER_G_OP_Y, STEP,             \
      MB_SAVES_Y, MB_V_NONE, 0, 0, NULL, NULL, MB_MAG_VALUE, "threshold_backward")                                            \
    X(ABS, "abs", 1, MB_OPK_MAP, MB_SPELL_CALL, 1, 0, MB_COST_ARITH, MB_DER_G_OP_X, SIGN,               \
      MB_SAVES_X, MB_V_NONE, 0, 0, NULL, NULL, MB_MAG_PASS, NULL)                                             \
    /* exact (erf) GELU; erf polynomial */                                                             \
    X(GELU, "gelu", 1, MB_OPK_LIBRARY, MB_SPELL_CALL, 12, 1, MB_COST_SFU, MB_DER_G_OP_X, GELU_GRAD,     \
      MB_SAVES_X, MB_V_GELU, MB_OPF_VEC | MB_OPF_JIT, 2, "gelu(", ")", MB_MAG_VALUE, "gelu_backward")                    \
    /* copy(x): a new tensor equal to x, as torch's clone() */                                         \
    X(COPY, "copy", 1, MB_OPK_MAP, MB_SPELL_CALL, 0, 0, MB_COST_ARITH, MB_DER_PASS, INPUT,              \
      MB_SAVES_NONE, MB_V_COPY, MB_OPF_JIT, 0, NULL, NULL, MB_MAG_PASS, NULL)                                 \
    /* 1 / x: PyTorch evaluates scalar / tensor as reciprocal then mul; rcp + refinement */            \
    X(RECIPROCAL, "reciprocal", 1, MB_OPK_MAP, MB_SPELL_NONE, 2, 1, MB_COST_SFU, MB_DER_CODE, INPUT,    \
      MB_SAVES_Y, MB_V_RECIPROCAL, MB_OPF_JIT | MB_OPF_POSITIVE, 0, NULL, NULL, MB_MAG_VALUE, NULL)           \
    /* torch.erf; an erf polynomial, an exp in the tails */                                            \
    X(ERF, "erf", 1, MB_OPK_MAP, MB_SPELL_CALL, 10, 1, MB_COST_SFU, MB_DER_CODE, INPUT,            \
      MB_SAVES_X, MB_V_ERF, MB_OPF_VEC | MB_OPF_JIT, 1, "erf(", ")", MB_MAG_VALUE, NULL)                      \
    /* F.softplus (beta 1, threshold 20): ex2, lg2 */                                                  \
    X(SOFTPLUS, "softplus", 1, MB_OPK_LIBRARY, MB_SPELL_CALL, 4, 2, MB_COST_SFU, MB_DER_G_OP_X, SIGMOID, \
      MB_SAVES_X, MB_V_SOFTPLUS, MB_OPF_VEC | MB_OPF_JIT, 2, "softplus(", ")", MB_MAG_VALUE, "softplus_backward")            \
    /* F.silu, x sigmoid(x): ex2, rcp, mul */                                                          \
    X(SILU, "silu", 1, MB_OPK_LIBRARY, MB_SPELL_CALL, 4, 2, MB_COST_SFU, MB_DER_G_OP_X, SILU_GRAD,      \
      MB_SAVES_X, MB_V_SILU, MB_OPF_VEC | MB_OPF_JIT, 2, "silu(", ")", MB_MAG_VALUE, "silu_backward")                    \
    /* autodiff's helpers: 1 where x > 0, else 0 (relu'); -1, 0, 1 (abs') */                           \
    X(STEP, "step", 1, MB_OPK_MAP, MB_SPELL_NONE, 1, 0, MB_COST_ARITH, MB_DER_NONE, INPUT,              \
      MB_SAVES_NONE, MB_V_NONE, 0, 0, NULL, NULL, MB_MAG_VALUE, NULL)                                         \
    X(SIGN, "sign", 1, MB_OPK_MAP, MB_SPELL_NONE, 2, 0, MB_COST_ARITH, MB_DER_NONE, INPUT,              \
      MB_SAVES_NONE, MB_V_NONE, 0, 0, NULL, NULL, MB_MAG_VALUE, NULL)                                         \
    /* d gelu(x) / dx */                                                                               \
    X(GELU_GRAD, "gelu_grad", 1, MB_OPK_MAP, MB_SPELL_NONE, 16, 2, MB_COST_SFU, MB_DER_NONE, INPUT,     \
      MB_SAVES_NONE, MB_V_GELU_GRAD, MB_OPF_VEC | MB_OPF_JIT, 2, NULL, NULL, MB_MAG_VALUE, NULL)              \
    /* d silu(x) / dx = s (1 + x (1 - s)), s = sigmoid(x) */                                           \
    X(SILU_GRAD, "silu_grad", 1, MB_OPK_MAP, MB_SPELL_NONE, 6, 2, MB_COST_SFU, MB_DER_NONE, INPUT,      \
      MB_SAVES_NONE, MB_V_SILU_GRAD, MB_OPF_VEC | MB_OPF_JIT, 2, NULL, NULL, MB_MAG_VALUE, NULL)              \
    /* 1 where a == b, else 0: amax's arg-max mask (torch.eq; PyTorch's mask is   */                  \
    /* bool, 1 B an element, here the operands' type)                            */                  \
    X(EQ, "eq", 2, MB_OPK_MAP, MB_SPELL_NONE, 1, 0, MB_COST_ARITH, MB_DER_NONE, INPUT,                 \
      MB_SAVES_NONE, MB_V_NONE2, 0, 0, NULL, NULL, MB_MAG_VALUE, NULL)                                        \
    /* row operations over the last dimension (MB_OPF_ROW); the reductions:   */                      \
    /* torch.sum / mean / amax (x, -1, keepdim); one add or max per element   */                      \
    X(SUM, "sum", 1, MB_OPK_REDUCTION, MB_SPELL_CALL, 1, 0, MB_COST_ARITH, MB_DER_CODE, INPUT,          \
      MB_SAVES_NONE, MB_V_NONE, MB_OPF_ROW, 0, NULL, NULL, MB_MAG_SUM, NULL)                                  \
    X(MEAN, "mean", 1, MB_OPK_REDUCTION, MB_SPELL_CALL, 1, 0, MB_COST_ARITH, MB_DER_CODE, INPUT,        \
      MB_SAVES_NONE, MB_V_NONE, MB_OPF_ROW, 0, NULL, NULL, MB_MAG_SUM, NULL)                                  \
    X(AMAX, "amax", 1, MB_OPK_REDUCTION, MB_SPELL_CALL, 1, 0, MB_COST_ARITH, MB_DER_CODE, INPUT,        \
      MB_SAVES_XY, MB_V_NONE, MB_OPF_ROW, 0, NULL, NULL, MB_MAG_PASS, NULL)                                 \
    /* F.softmax(x, -1): max, exp(x - max) (ex2 + mul), sum, one division   */                      \
    X(SOFTMAX, "softmax", 1, MB_OPK_LIBRARY, MB_SPELL_CALL, 6, 2, MB_COST_SFU, MB_DER_CODE, INPUT,      \
      MB_SAVES_Y, MB_V_NONE, MB_OPF_ROW, 0, NULL, NULL, MB_MAG_VALUE, "_softmax_backward_data")                                \
    /* F.log_softmax(x, -1): max, exp, sum, x - max - log(sum)             */                      \
    X(LOG_SOFTMAX, "log_softmax", 1, MB_OPK_LIBRARY, MB_SPELL_CALL, 5, 1, MB_COST_SFU, MB_DER_CODE,      \
      INPUT, MB_SAVES_Y, MB_V_NONE, MB_OPF_ROW, 0, NULL, NULL, MB_MAG_VALUE, "_log_softmax_backward_data")                         \
    /* F.layer_norm(x, [cols], w) (the bias is an add in its kernel): mean,  */                      \
    /* variance (Welford), (x - mean) rstd w                                */                      \
    X(LAYER_NORM, "layer_norm", 2, MB_OPK_LIBRARY, MB_SPELL_CALL, 8, 0, MB_COST_ARITH, MB_DER_CODE,      \
      INPUT, MB_SAVES_X, MB_V_NONE2, MB_OPF_ROW, 0, NULL, NULL, MB_MAG_VALUE, "native_layer_norm_backward")                         \
    /* F.rms_norm(x, [cols], w): mean of squares, x rstd w                  */                      \
    X(RMS_NORM, "rms_norm", 2, MB_OPK_LIBRARY, MB_SPELL_CALL, 4, 0, MB_COST_ARITH, MB_DER_CODE,          \
      INPUT, MB_SAVES_X, MB_V_NONE2, MB_OPF_ROW, 0, NULL, NULL, MB_MAG_VALUE, "rms_norm_backward") \
    /* the column reduction: a sum over the rows (dim 0) of a [rows, cols]    */                      \
    /* tensor, a [cols] result: autograd's sum_to for a weight's gradient     */                      \
    /* (made by autodiff only); one add per element it reads                  */                      \
    X(COLSUM, "colsum", 1, MB_OPK_COLUMN, MB_SPELL_NONE, 1, 0, MB_COST_ARITH, MB_DER_NONE, INPUT,       \
      MB_SAVES_NONE, MB_V_NONE, 0, 0, NULL, NULL, MB_MAG_SUM, NULL)
/* clang-format on */

#endif
