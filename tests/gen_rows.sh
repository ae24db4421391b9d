# gen_rows.sh — sourced by the report tests that need many rows:
# gen ROWS FILE writes a measurement CSV of ROWS rows, the lecture's eight
# series on h100-sxm (f32 and bf16 in turn) at sizes 2^16..2^28, times on a
# 3 TB/s line with 5% noise (seeded: the same file every run).
gen() {
  awk -v rows="$1" 'BEGIN {
    split("copy eager|sin2_plus_cos2 eager|sin2_plus_cos2 fused|gelu_tanh eager|gelu_tanh fused|sigmoid3 eager|sigmoid3 store|sigmoid3 recompute", se, "|")
    print "device,backend,variant,plan,dtype,n,time_s_median,verified"
    srand(24)
    for (i = 0; i < rows; i++) {
      split(se[i % 8 + 1], vp, " ")
      n = 2 ^ (16 + int(rand() * 13))
      printf "h100-sxm,cuda,%s,%s,%s,%d,%.6g,1\n", vp[1], vp[2], (int(i / 8) % 2) ? "bf16" : "f32", n,
             n * 8 / 3e12 * (1 + 0.05 * rand()) + 5e-6
    }
  }' >"$2"
}
