/* device_table.c — the built-in device table and lookup by id or spec file.
 * Every figure comes from shared/reference/gpu-specs.md; each row's source
 * string names where. Does not parse INI files (device_ini.c does). */
#include "model_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rounds a derived figure (fraction of peak x peak) to whole GB/s, in a
 * constant expression so the table keeps its arithmetic visible. */
#define MB_ROUND(x) ((double)(long long)((x) + 0.5))

/* Units (the names say them): bandwidth GB/s = 1e9 B/s, datasheet peak;
 * measured_bandwidth_gbs = a streaming benchmark's fraction of peak x peak,
 * 0 where the reference has none; cache_mb = last-level cache on the memory
 * path in MiB as drivers report it (Infinity Cache on MI300X/MI325X);
 * fp32_tflops = plain (non-tensor, non-packed) FP32 with FMA = 2 flops;
 * bf16_tflops = dense tensor rate with FP32 accumulate: datasheets print
 * 2:4 sparse figures, halved here; 0 where the GPU has no BF16 tensor path;
 * f16_tflops = the same for FP16, given only where it differs (V100, T4);
 * sfu_tops = special-function (MUFU) ops/s in 1e12, SMs x 16 per clock x
 * clock from the reference's per-CC table, 0 where it gives no rate;
 * launch_overhead_us = per eager launch, the interval of back-to-back
 * launches from one host thread on one stream: measured where [B] ran the
 * GPU, else 3 us for NVIDIA datacenter GPUs (reference section 4 default,
 * 3-5 us; [B] measured 2.4-2.6 us on H200 and A100), 4 us for GeForce (an
 * RTX 5070 Ti measured "about 4-6 us", [S37a]), 2.0 us for AMD (MI210 in [B],
 * the only AMD figure), 5 us assumed for Jetson (no figure);
 * graph_launch_overhead_us = the same replayed as one CUDA/HIP graph, only
 * where [B] measured it (the model does not use it); mem_gb = marketed
 * capacity; cited_bandwidth_gbs = the figure the source cites for the
 * measured bandwidth; cache_resident_mb = an L2 sweep's knee, where [B] has
 * one (0: cache_mb is used).
 * Source tags [Sx] are those of shared/reference/gpu-specs.md. [B] is
 * RRZE-HPC/gpu-benches on GitHub (commit 1038c5d): gpu-stream/<gpu>.txt runs
 * init, read, scale (A[i] = B[i] * c), triad on 2 GiB f64 arrays (2^28 + 2
 * doubles) and counts GB/s = streams x 2^28 x 8 B / median time (scale: read
 * + write, no write-allocate read, the model's counting); the figure taken is
 * scale at 100% occupancy, the file's last row. gpu-l2-cache/<gpu>.txt reads
 * a data set over and over; its knee is taken where bandwidth falls halfway
 * from the L2 plateau to DRAM. gpu-small-kernels/<gpu>[_graph].txt queues
 * back-to-back scale kernels; the launch interval is 64 KiB over the row's
 * best GB/s at the smallest size (two 32 KiB arrays, L2-resident).
 * onchip_kib = what one SM (CU) holds a row in: NVIDIA, the CUDA C++
 * Programming Guide's "Technical Specifications per Compute Capability":
 * 64 K 32-bit registers per SM (256 KiB) on every CC in the table, plus the
 * most shared memory per SM: CC 7.0 96 KB, 7.5 64, 8.0 and 8.7 164, 8.6,
 * 8.9 and 12.0 100 (12.0 unconfirmed), 9.0 and 10.0 228 (H100: 228 + 256 =
 * 484); AMD CDNA2/CDNA3 (the ISA guides): 64 KiB LDS plus 512 KiB of vector
 * registers (VGPR + AGPR) per CU = 576; register_kib = the registers alone
 * (256 NVIDIA, 512 CDNA): what a Triton program a row holds its row in.
 * sm_count = SMs / CUs, the
 * reference's main table (L4: 58 derived, a listing says 60).
 * max_threads_per_sm = resident threads per SM (CU), the same guide table's
 * "maximum number of resident threads per SM" by CC, each seen in a public
 * deviceQuery ("Maximum number of threads per multiprocessor") of a GPU of
 * that CC: 7.0 2048 (V100-SXM2-32GB), 7.5 1024 (T4), 8.0 2048 (A100 SXM,
 * [S3]'s repository thamada/nvidia-smi gls/), 8.6 1536 (A40, RTX 3090, the
 * same), 8.7 1536 (Jetson Orin; not 2048 as 8.0), 8.9 1536 (L4, L40S, RTX
 * 4090, the same), 9.0 2048 (H100 SXM and NVL, [S3]), 12.0 1536 (RTX 5090);
 * 10.0 2048 from the guide alone (no B200 dump seen: unconfirmed). AMD CDNA2
 * and CDNA3: 2048, rocminfo's "Max Waves Per CU: 32" (wave64) and "Max
 * Work-item Per CU: 2048" for MI210 and MI250X (gfx90a) and MI300X (gfx942)
 * in rocminfo dumps posted on GitHub, and HIP's "Maximum resident threads per
 * multi-processor 2048" for MI300X in [S3]'s repository; MI325X is gfx942
 * too (no dump seen). The model's rows in flight of a multi-pass row kernel
 * are sm_count x max_threads_per_sm / 256 (mb_device_rows_in_flight). */
static const mb_device device_table[] = {
    {.name = "h100-sxm", .label = "NVIDIA H100 SXM5 80GB", .kind = "gpu", .onchip_kib = 484, .register_kib = 256, .sm_count = 132,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 3350, .measured_bandwidth_gbs = MB_ROUND(0.80 * 3350),
     .cited_bandwidth_gbs = MB_ROUND(0.80 * 3350),
     .cache_mb = 50, .fp32_tflops = 66.9, .bf16_tflops = 989.4, .bf16_gemm_tflops = 794.5,
     .sfu_tops = 132 * 16 * 1.83e-3, .launch_overhead_us = 3, .mem_gb = 80,
     .source = "NVIDIA H100 datasheet via glennklockwood.com [S2] and Lightning-AI "
               "throughput.py [S1] (BF16 1979 sparse, halved); 132 SMs and L2 52428800 B "
               "from an H100 deviceQuery dump [S3]; SFU 132 SMs x 16/clk x 1.83 GHz = the "
               "3.9 TOPS of FlashAttention-3 [S34]; measured BW: FluidX3D benchmark table, "
               "80% of peak [S7]; launch: gpu-specs.md sec. 4 default"
               "; bf16 GEMM 794.5 TF: stas00 MAMF table [S8] (torch 2.7.0+cu126)"},
    {.name = "h100-pcie", .label = "NVIDIA H100 PCIe 80GB", .kind = "gpu", .onchip_kib = 484, .register_kib = 256, .sm_count = 114,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 2000, .measured_bandwidth_gbs = MB_ROUND(0.85 * 2000),
     .cited_bandwidth_gbs = MB_ROUND(0.85 * 2000), .cache_mb = 50, .cache_resident_mb = 42.5,
     .fp32_tflops = 51.2, .bf16_tflops = 756,
     .sfu_tops = 114 * 16 * 1.755e-3, .launch_overhead_us = 3, .mem_gb = 80,
     .source = "NVIDIA H100 PCIe datasheet (hpctech copy) [S1] and product brief "
               "PB-11133 [S5]; 114 SMs, 1755 MHz boost (Chips and Cheese saw 1395 MHz at "
               "350 W [S4]); L2 as H100 SXM [S2]; SFU 114 x 16/clk x 1.755 GHz (CUDA "
               "Programming Guide rates [S31]); measured BW: FluidX3D 85% [S7] ([B] "
               "gpu-stream scale 1704 agrees); resident L2 42.5 MiB: knee of [B] "
               "gpu-l2-cache/h100_pcie.txt; launch: gpu-specs.md sec. 4 default"},
    {.name = "h100-nvl", .label = "NVIDIA H100 NVL 94GB (per GPU)", .kind = "gpu", .onchip_kib = 484, .register_kib = 256, .sm_count = 132,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 3900, .measured_bandwidth_gbs = MB_ROUND(0.79 * 3938),
     .cited_bandwidth_gbs = MB_ROUND(0.79 * 3938),
     .cache_mb = 50, .fp32_tflops = 60, .bf16_tflops = 835,
     .sfu_tops = 132 * 16 * 1.785e-3, .launch_overhead_us = 3, .mem_gb = 94,
     .source = "NVIDIA H100 NVL datasheet (PNY copy) and nvidia.com H100 table [S6] "
               "(BF16 1671 sparse, halved); L2 50 MB assumed as other GH100 parts "
               "(unconfirmed); SFU 132 x 16/clk x 1.785 GHz (clock derived from FluidX3D's "
               "60.32 TF [S7]); measured BW: FluidX3D 79% of its 3938 GB/s [S7]; launch: "
               "gpu-specs.md sec. 4 default"},
    {.name = "h200", .label = "NVIDIA H200 SXM 141GB", .kind = "gpu", .onchip_kib = 484, .register_kib = 256, .sm_count = 132,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 4800, .measured_bandwidth_gbs = MB_ROUND(0.73 * 4800),
     .cited_bandwidth_gbs = MB_ROUND(0.73 * 4800), .cache_mb = 60, .cache_resident_mb = 49.3,
     .fp32_tflops = 66.9, .bf16_tflops = 989.4, .bf16_gemm_tflops = 794.5, .sfu_tops = 132 * 16 * 1.83e-3,
     .launch_overhead_us = 2.4, .graph_launch_overhead_us = 1.3, .mem_gb = 141,
     .source = "AnandTech SC23 H200 article and hwcooling.net [S9] (memory), compute as "
               "H100 SXM [S2]; L2 60 MB as PyTorch reports on an H200 cloud VM (stas00 "
               "ml-engineering [S8] says 50); SFU as H100 SXM [S34]; measured BW rests on "
               "FluidX3D 73% [S7]: [B] has only read-only streams for H200, 3888 GB/s "
               "(gpu-l2-cache/h200.txt, one f64 stream, to 4.7 GiB) and 3780 "
               "(gpu-roofline, two f32 streams); resident L2 49.3 MiB: [B] gpu-l2-cache "
               "knee; launch 2.4 us, graph 1.3: [B] gpu-small-kernels/h200[_graph].txt"
               "; bf16 GEMM 794.5 TF: stas00 MAMF table [S8] (the H100 SXM's row: 'H200 is the same')"},
    {.name = "gh200", .label = "NVIDIA GH200 Grace Hopper, GPU with 96GB HBM3", .kind = "gpu", .onchip_kib = 484, .register_kib = 256, .sm_count = 132,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 4000, .measured_bandwidth_gbs = MB_ROUND(0.79 * 4000),
     .cited_bandwidth_gbs = MB_ROUND(0.79 * 4000), .cache_mb = 60, .cache_resident_mb = 49.3,
     .fp32_tflops = 67, .bf16_tflops = 990, .bf16_gemm_tflops = 828.6,
     .sfu_tops = 132 * 16 * 1.83e-3, .launch_overhead_us = 3, .mem_gb = 96,
     .source = "NVIDIA GH200 datasheet [S10] (transcribed in atineoSE/coding-model-seeks-gpu); "
               "L2 60 MiB as stas00 ml-engineering [S8] and [B] gpu-latency/gh200.txt (L2 "
               "latency to ~58 MiB, DRAM from ~63), resident 49.3 as the H200's sweep (no "
               "GH200 sweep); SFU as H100 SXM [S34]; measured BW: FluidX3D 79% [S7] ([B] "
               "gpu-stream scale 3174 agrees; OpenCL-Benchmark read 90%, write 93% [S36]); "
               "launch: gpu-specs.md sec. 4 default (a GH200 note gives 2.3 us driver API "
               "[S37e])"
               "; bf16 GEMM 828.6 TF: stas00 MAMF table [S8] (the 144GB GH200's row: the same GPU and clocks)"},
    {.name = "gh200-144gb", .label = "NVIDIA GH200 Grace Hopper, GPU with 144GB HBM3e",
     .kind = "gpu", .onchip_kib = 484, .register_kib = 256, .sm_count = 132, .max_threads_per_sm = 2048,
     .mem_bandwidth_gbs = 4900, .measured_bandwidth_gbs = 0,
     .cache_mb = 60, .cache_resident_mb = 49.3, .fp32_tflops = 67, .bf16_tflops = 990, .bf16_gemm_tflops = 828.6,
     .sfu_tops = 132 * 16 * 1.83e-3, .launch_overhead_us = 3, .mem_gb = 144,
     .source = "NVIDIA GH200 datasheet [S10] (144 GB HBM3e, up to 4.9 TB/s); L2 as gh200 "
               "(60 MiB, resident 49.3 as the H200's sweep [B]); SFU as H100 SXM "
               "[S34]; no measured BW for this memory option; launch: gpu-specs.md sec. 4 "
               "default"
               "; bf16 GEMM 828.6 TF: stas00 MAMF table [S8] (900 W 141 GiB HBM3e GH200, torch 2.6.0+cu126)"},
    {.name = "b200", .label = "NVIDIA B200 180GB (HGX, per GPU)", .kind = "gpu", .onchip_kib = 484, .register_kib = 256, .sm_count = 148,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 7700, .measured_bandwidth_gbs = MB_ROUND(0.81 * 8000),
     .cited_bandwidth_gbs = MB_ROUND(0.81 * 8000),
     .cache_mb = 126.5, .fp32_tflops = 75, .bf16_tflops = 2250, .bf16_gemm_tflops = 1745.0,
     .sfu_tops = 5.0, .launch_overhead_us = 3, .mem_gb = 180,
     .source = "NVIDIA Blackwell datasheet [S11] (BF16 4.5 PF sparse, halved; early material "
               "said 8 TB/s); L2 129536 KiB from a B200 driver-property dump [S13] "
               "(unconfirmed); SFU: 'SFU EX2 5 TeraExponentials/s' (verda.com GB300 article "
               "[S15]); measured BW: FluidX3D 81% of 8000 GB/s [S7]; launch: gpu-specs.md "
               "sec. 4 default"
               "; bf16 GEMM 1745.0 TF: stas00 MAMF table [S8] (torch 2.7.1+cu128)"},
    {.name = "gb200", .label = "NVIDIA GB200 (per Blackwell GPU)", .kind = "gpu", .onchip_kib = 484, .register_kib = 256, .sm_count = 148,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 8000, .measured_bandwidth_gbs = 0,
     .cache_mb = 126.5, .fp32_tflops = 80, .bf16_tflops = 2500, .bf16_gemm_tflops = 1822.0,
     .sfu_tops = 148 * 16 * 2.112e-3, .launch_overhead_us = 3, .mem_gb = 186,
     .source = "NVIDIA Blackwell datasheet [S11] (BF16 5 PF sparse, halved); 148 SMs and "
               "2.11 GHz from hmc-tech.com [S14] (unconfirmed); L2 assumed as B200 (same die); "
               "SFU 148 x 16/clk x 2.112 GHz; no measured BW in the reference; launch: "
               "gpu-specs.md sec. 4 default"
               "; bf16 GEMM 1822.0 TF: stas00 MAMF table [S8] (torch 2.10.0.dev+cu130)"},
    {.name = "a100-40gb", .label = "NVIDIA A100 SXM4 40GB", .kind = "gpu", .onchip_kib = 420, .register_kib = 256, .sm_count = 108,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 1555, .measured_bandwidth_gbs = 1382, .cited_bandwidth_gbs = 1382,
     .cache_mb = 40, .cache_resident_mb = 33.3, .fp32_tflops = 19.5, .bf16_tflops = 312, .bf16_gemm_tflops = 271.2,
     .sfu_tops = 108 * 16 * 1.41e-3, .launch_overhead_us = 3, .mem_gb = 40,
     .source = "NVIDIA A100 datasheet via Lightning-AI throughput.py [S1]; 108 SMs, 1410 MHz, "
               "40 MB L2 (stas00 ml-engineering [S8], gpu_catalog [S16]); SFU 108 x 16/clk x "
               "1.41 GHz (16/clk unconfirmed for CC 8.0); measured BW: [B] "
               "gpu-stream/a100_40.txt scale, 2 GiB f64 arrays, read + write, 100% "
               "occupancy: 1382 (the file does not name SXM or PCIe; FluidX3D 84% [S7]); "
               "resident L2 33.3 MiB as the A100 80GB's [B] gpu-l2-cache knee (same GA100 L2); "
               "launch: gpu-specs.md sec. 4 default"
               "; bf16 GEMM 271.2 TF: stas00 MAMF table [S8] (A100 SXM, memory not given, torch 2.6.0+cu126)"},
    {.name = "a100-80gb", .label = "NVIDIA A100 SXM4 80GB", .kind = "gpu", .onchip_kib = 420, .register_kib = 256, .sm_count = 108,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 2039, .measured_bandwidth_gbs = 1737, .cited_bandwidth_gbs = 1737,
     .cache_mb = 40, .cache_resident_mb = 33.3, .fp32_tflops = 19.5, .bf16_tflops = 312, .bf16_gemm_tflops = 271.2,
     .sfu_tops = 108 * 16 * 1.41e-3, .launch_overhead_us = 2.6,
     .graph_launch_overhead_us = 1.3, .mem_gb = 80,
     .source = "NVIDIA A100 datasheet via Lightning-AI throughput.py [S1]; 2039 GB/s from "
               "FluidX3D [S7] and profile-scripts A100-80GB-SXM.mk [S16]; 40 MB L2 [S8]; SFU "
               "108 x 16/clk x 1.41 GHz (16/clk unconfirmed for CC 8.0); measured BW: [B] "
               "gpu-stream/a100_80.txt scale, 2 GiB f64 arrays, read + write, 100% "
               "occupancy: 1737 ([B] plots it against 2039; FluidX3D 77% [S7]); resident "
               "L2 33.3 MiB: [B] gpu-l2-cache knee; launch 2.6 us, graph 1.3: [B] "
               "gpu-small-kernels/a100_80[_graph].txt"
               "; bf16 GEMM 271.2 TF: stas00 MAMF table [S8] (A100 SXM, memory not given, torch 2.6.0+cu126)"},
    {.name = "a100-pcie-40gb", .label = "NVIDIA A100 PCIe 40GB", .kind = "gpu", .onchip_kib = 420, .register_kib = 256, .sm_count = 108,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 1555, .measured_bandwidth_gbs = MB_ROUND(0.84 * 1555),
     .cited_bandwidth_gbs = MB_ROUND(0.84 * 1555),
     .cache_mb = 40, .cache_resident_mb = 33.3, .fp32_tflops = 19.5, .bf16_tflops = 312, .bf16_gemm_tflops = 252.9,
     .sfu_tops = 108 * 16 * 1.41e-3, .launch_overhead_us = 3, .mem_gb = 40,
     .source = "NVIDIA A100 datasheet via Lightning-AI throughput.py [S1] ('SXM and PCIe have "
               "same flop counts'); 40 MB L2 [S8]; SFU 108 x 16/clk x 1.41 GHz (16/clk "
               "unconfirmed for CC 8.0); measured BW: FluidX3D 84% [S7] (OpenCL-Benchmark "
               "read 87%, write 97% [S36]); resident L2 33.3 MiB as the A100 80GB's [B] "
               "gpu-l2-cache knee (same GA100 L2); launch: gpu-specs.md sec. 4 default"
               "; bf16 GEMM 252.9 TF: stas00 MAMF table [S8] (A100 PCIe, memory not given, torch 2.5.1+cu124; this card's 250 W against the 80GB's 300 W may hold lower clocks)"},
    {.name = "a100-pcie-80gb", .label = "NVIDIA A100 PCIe 80GB", .kind = "gpu", .onchip_kib = 420, .register_kib = 256, .sm_count = 108,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 1935, .measured_bandwidth_gbs = MB_ROUND(0.76 * 1935),
     .cited_bandwidth_gbs = MB_ROUND(0.76 * 1935),
     .cache_mb = 40, .cache_resident_mb = 33.3, .fp32_tflops = 19.5, .bf16_tflops = 312, .bf16_gemm_tflops = 252.9,
     .sfu_tops = 108 * 16 * 1.41e-3, .launch_overhead_us = 3, .mem_gb = 80,
     .source = "NVIDIA A100 datasheet via Lightning-AI throughput.py [S1]; 1935 GB/s from "
               "FluidX3D [S7]; 40 MB L2 [S8], resident 33.3 MiB as the A100 80GB's [B] "
               "gpu-l2-cache knee (same GA100 L2); SFU 108 x 16/clk x 1.41 GHz (16/clk "
               "unconfirmed for CC 8.0); measured BW: FluidX3D 76% [S7]; launch: "
               "gpu-specs.md sec. 4 default"
               "; bf16 GEMM 252.9 TF: stas00 MAMF table [S8] (A100 PCIe, memory not given, torch 2.5.1+cu124)"},
    {.name = "v100", .label = "NVIDIA V100 SXM2 32GB", .kind = "gpu", .onchip_kib = 352, .register_kib = 256, .sm_count = 80,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 900, .measured_bandwidth_gbs = 809, .cited_bandwidth_gbs = 809,
     .cache_mb = 6, .fp32_tflops = 15.7, .bf16_tflops = 0, .f16_tflops = 125,
     .sfu_tops = 80 * 16 * 1.53e-3, .launch_overhead_us = 3, .mem_gb = 32,
     .source = "NVIDIA V100 datasheet via Lightning-AI throughput.py [S1]; other figures from "
               "gpu_catalog [S16]; L2 6144 KiB from an NVIDIA/nvbench GV100 dump [S17]; no "
               "BF16, so bf16 0 (FP16 tensor 125 TF: f16); SFU 80 x 16/clk x 1.53 GHz (CUDA "
               "Programming Guide [S31]); measured BW: [B] gpu-stream/v100.txt scale, 2 GiB "
               "f64 arrays, read + write, 100% occupancy: 809 (variant not named; PCIe and "
               "SXM2 both 900 GB/s; FluidX3D 76% [S7], Citadel about 83%); launch: "
               "gpu-specs.md sec. 4 default"},
    {.name = "t4", .label = "NVIDIA T4 16GB", .kind = "gpu", .onchip_kib = 320, .register_kib = 256, .sm_count = 40,
     .max_threads_per_sm = 1024, .mem_bandwidth_gbs = 320, .measured_bandwidth_gbs = MB_ROUND(0.69 * 300),
     .cited_bandwidth_gbs = MB_ROUND(0.69 * 300),
     .cache_mb = 4, .fp32_tflops = 8.1, .bf16_tflops = 0, .f16_tflops = 65,
     .sfu_tops = 40 * 16 * 1.59e-3, .launch_overhead_us = 3, .mem_gb = 16,
     .source = "NVIDIA T4 datasheet via Lightning-AI throughput.py [S1]; other figures from "
               "gpu_catalog [S16]; no BF16, so bf16 0 (FP16 mixed 65 TF: f16); SFU 40 x 16/clk x "
               "1.59 GHz (CUDA Programming Guide [S31]); measured BW: FluidX3D 69% of its "
               "listed 300 GB/s [S7] (OpenCL-Benchmark read 77%, write 67%); launch: "
               "gpu-specs.md sec. 4 default"},
    {.name = "l4", .label = "NVIDIA L4 24GB", .kind = "gpu", .onchip_kib = 356, .register_kib = 256, .sm_count = 58,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 300, .measured_bandwidth_gbs = MB_ROUND(0.76 * 300),
     .cited_bandwidth_gbs = MB_ROUND(0.76 * 300),
     .cache_mb = 48, .fp32_tflops = 30.3, .bf16_tflops = 121,
     .sfu_tops = 58 * 16 * 2.04e-3, .launch_overhead_us = 3, .mem_gb = 24,
     .source = "NVIDIA L4 figures from grokipedia L4 vs L40S, store.sourcecode.com and "
               "fpsbench.com [S19] (BF16 242 sparse, halved); FP32 also in FluidX3D [S7]; "
               "SFU 58 SMs (derived from FP32; listings say 60) x 16/clk x 2.04 GHz, 16/clk "
               "unconfirmed for CC 8.9; measured BW: FluidX3D 76% [S7]; launch: "
               "gpu-specs.md sec. 4 default"},
    {.name = "l40s", .label = "NVIDIA L40S 48GB", .kind = "gpu", .onchip_kib = 356, .register_kib = 256, .sm_count = 142,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 864, .measured_bandwidth_gbs = MB_ROUND(0.67 * 864),
     .cited_bandwidth_gbs = MB_ROUND(0.67 * 864),
     .cache_mb = 96, .fp32_tflops = 91.6, .bf16_tflops = 362,
     .sfu_tops = 142 * 16 * 2.52e-3, .launch_overhead_us = 3, .mem_gb = 48,
     .source = "NVIDIA L40S datasheet table (mullet.se, reach.dog) [S20] (BF16 733 sparse, "
               "halved); 142 SMs, 2520 MHz and L2 100663296 B from a public L40S deviceQuery "
               "[S20b]; SFU 142 x 16/clk x 2.52 GHz, 16/clk unconfirmed for CC 8.9; measured "
               "BW: FluidX3D 67% [S7], no direct STREAM figure found (the L40, same die and "
               "memory, FluidX3D 69%, reaches 776 on [B] scale: this row may be 25% low); "
               "launch: gpu-specs.md sec. 4 default"},
    {.name = "l40", .label = "NVIDIA L40 48GB", .kind = "gpu", .onchip_kib = 356, .register_kib = 256, .sm_count = 142,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 864, .measured_bandwidth_gbs = 776, .cited_bandwidth_gbs = 776,
     .cache_mb = 96, .fp32_tflops = 90.52, .bf16_tflops = 362.07,
     .sfu_tops = 142 * 16 * 2.49e-3, .launch_overhead_us = 1.6, .graph_launch_overhead_us = 0.9,
     .mem_gb = 48,
     .source = "FluidX3D table [S7] (90.52 TF FP32, 48 GB, 864 GB/s); BF16 362.07 dense, FP32 "
               "accumulate, 2490 MHz from hmc-tech.com's L40-vs-A40 page (unconfirmed); "
               "142 SMs and 96 MiB L2 as the L40S (same AD102) [S20b], 96 MB in [B]'s README; "
               "SFU 142 x 16/clk x 2.49 GHz, 16/clk unconfirmed for CC 8.9; measured BW: [B] "
               "gpu-stream/l40.txt scale, 2 GiB f64 arrays, read + write, 100% occupancy: "
               "776 (FluidX3D 69% [S7]); [B]'s L2 knee is at the nominal size; launch 1.6 "
               "us, graph 0.9: [B] gpu-small-kernels/l40[_graph].txt"},
    {.name = "a10", .label = "NVIDIA A10 24GB", .kind = "gpu", .onchip_kib = 356, .register_kib = 256, .sm_count = 72,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 600, .measured_bandwidth_gbs = MB_ROUND(0.75 * 600),
     .cited_bandwidth_gbs = MB_ROUND(0.75 * 600),
     .cache_mb = 6, .fp32_tflops = 31.2, .bf16_tflops = 125,
     .sfu_tops = 72 * 16 * 1.695e-3, .launch_overhead_us = 3, .mem_gb = 24,
     .source = "NVIDIA A10 datasheet via Lightning-AI throughput.py [S1]; 1695 MHz and L2 "
               "6291456 B from an A10 dump (aalanwyr/face2cuda) [S21]; 72 SMs (A10G has 80 "
               "[S16]); SFU 72 x 16/clk x 1.695 GHz (SFU:FP32 1:8 on Ampere, NVIDIA forums "
               "[S32]); measured BW: FluidX3D 75% [S7]; launch: gpu-specs.md sec. 4 default"},
    {.name = "a40", .label = "NVIDIA A40 48GB", .kind = "gpu", .onchip_kib = 356, .register_kib = 256, .sm_count = 84,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 696, .measured_bandwidth_gbs = 653, .cited_bandwidth_gbs = 653,
     .cache_mb = 6, .fp32_tflops = 37.42, .bf16_tflops = 149.67,
     .sfu_tops = 84 * 16 * 1.74e-3, .launch_overhead_us = 2, .graph_launch_overhead_us = 1.1,
     .mem_gb = 48,
     .source = "FluidX3D table [S7] (37.42 TF FP32, 48 GB, 696 GB/s); BF16 149.67 dense, FP32 "
               "accumulate, 84 SMs, 1740 MHz from hmc-tech.com's L40-vs-A40 page "
               "(unconfirmed); L2 6 MiB as the other GA102 rows (A10 dump [S21]); SFU 84 x "
               "16/clk x 1.74 GHz (SFU:FP32 1:8 on Ampere [S32]); measured BW: [B] "
               "gpu-stream/a40.txt scale, 2 GiB f64 arrays, read + write, 100% occupancy: "
               "653 (FluidX3D 74% [S7]); launch 2.0 us, graph 1.1: [B] "
               "gpu-small-kernels/a40[_graph].txt"},
    {.name = "rtx-3090", .label = "NVIDIA GeForce RTX 3090", .kind = "gpu", .onchip_kib = 356, .register_kib = 256, .sm_count = 82,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 936, .measured_bandwidth_gbs = MB_ROUND(0.89 * 936),
     .cited_bandwidth_gbs = MB_ROUND(0.89 * 936),
     .cache_mb = 6, .fp32_tflops = 35.6, .bf16_tflops = 71,
     .sfu_tops = 82 * 16 * 1.695e-3, .launch_overhead_us = 4, .mem_gb = 24,
     .source = "Lambda LLM-calculator gpu_specs.csv and FluidX3D [S24]; BF16 71 TF from the "
               "GA102 whitepaper (unconfirmed); SFU 82 x 16/clk x 1.695 GHz (SFU:FP32 1:8 on "
               "Ampere [S32]); measured BW: FluidX3D 89% [S7]; launch 4 us: GeForce, an RTX "
               "5070 Ti measured 4-6 us per launch [S37a]"},
    {.name = "rtx-4090", .label = "NVIDIA GeForce RTX 4090", .kind = "gpu", .onchip_kib = 356, .register_kib = 256, .sm_count = 128,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 1008, .measured_bandwidth_gbs = MB_ROUND(0.85 * 1008),
     .cited_bandwidth_gbs = MB_ROUND(0.85 * 1008),
     .cache_mb = 72, .fp32_tflops = 82.6, .bf16_tflops = 165.2,
     .sfu_tops = 128 * 16 * 2.52e-3, .launch_overhead_us = 4, .mem_gb = 24,
     .source = "Tom's Hardware RTX 4090 spec box [S22]; BF16 dense with FP32 accumulate from "
               "waredb.com and hmc-tech.com [S22]; SFU 128 x 16/clk x 2.52 GHz, 16/clk "
               "unconfirmed for CC 8.9; measured BW: FluidX3D 85% [S7]; launch 4 us: "
               "GeForce, an RTX 5070 Ti measured 4-6 us per launch [S37a]"},
    {.name = "rtx-5090", .label = "NVIDIA GeForce RTX 5090", .kind = "gpu", .onchip_kib = 356, .register_kib = 256, .sm_count = 170,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 1792, .measured_bandwidth_gbs = MB_ROUND(0.81 * 1792),
     .cited_bandwidth_gbs = MB_ROUND(0.81 * 1792),
     .cache_mb = 96, .fp32_tflops = 104.8, .bf16_tflops = 209.5,
     .sfu_tops = 0, .launch_overhead_us = 4, .mem_gb = 32,
     .source = "Tom's Hardware RTX 5090 review spec box and spheron.network [S23]; BF16 209.5 "
               "TF assumes the Ada-style half rate with FP32 accumulate (RTX Blackwell "
               "whitepaper note [S23b]; unconfirmed); no SFU rate for CC 12.0 in the "
               "reference; measured BW: FluidX3D 81% [S7]; launch 4 us: an RTX 5070 Ti "
               "measured 4-6 us per launch [S37a]"},
    {.name = "jetson-agx-orin", .label = "NVIDIA Jetson AGX Orin 64GB (GPU)", .kind = "gpu", .onchip_kib = 420, .register_kib = 256, .sm_count = 16,
     .max_threads_per_sm = 1536, .mem_bandwidth_gbs = 204.8, .measured_bandwidth_gbs = 0,
     .cache_mb = 4, .fp32_tflops = 5.3, .bf16_tflops = 42.5,
     .sfu_tops = 16 * 16 * 1.3e-3, .launch_overhead_us = 5, .mem_gb = 64,
     .source = "Jetson AGX Orin technical brief summary (mzph.cn) and fixstars blog [S25]; "
               "204.8 GB/s LPDDR5 shared with the CPU (unconfirmed); BF16 42.5 TF derived "
               "from 170 sparse INT8 TOPS / 4 (unconfirmed); SFU 16 SMs x 16/clk x 1.3 GHz "
               "(derived clock, 16/clk as CC 8.6); no measured BW; launch 5 us assumed "
               "(no Jetson figure in gpu-specs.md)"},
    {.name = "mi300x", .label = "AMD Instinct MI300X", .kind = "gpu", .onchip_kib = 576, .register_kib = 512, .sm_count = 304,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 5300, .measured_bandwidth_gbs = 3997, .cited_bandwidth_gbs = 3997,
     .cache_mb = 256, .fp32_tflops = 81.7, .bf16_tflops = 1307.4, .bf16_gemm_tflops = 668.4,
     .sfu_tops = 0, .launch_overhead_us = 2, .mem_gb = 192,
     .source = "ROCm gpu-specs.rst [S26] (304 CUs, L2 4 MiB per XCD, 256 MiB Infinity Cache: "
               "cache_mb is the Infinity Cache, the last level on the memory path); BF16 "
               "and BW from MI300X-vs-H200 report [S27]; FP32 81.7 non-packed (163.4 packed, "
               "unconfirmed); no SFU rate in the reference; measured BW: [B] "
               "gpu-stream/mi300x.txt scale, 2 GiB f64 arrays, read + write, 100% "
               "occupancy: 3997 (best 4058 at 87.5%; FluidX3D 66% [S7]); launch 2.0 us: "
               "MI210's in [B], the only AMD figure (unconfirmed for CDNA3)"
               "; bf16 GEMM 668.4 TF: stas00 MAMF table [S8] (TunableOp on, torch 2.5.1+rocm6.3)"},
    {.name = "mi325x", .label = "AMD Instinct MI325X", .kind = "gpu", .onchip_kib = 576, .register_kib = 512, .sm_count = 304,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 6000, .measured_bandwidth_gbs = 0,
     .cache_mb = 256, .fp32_tflops = 81.7, .bf16_tflops = 1307.4, .bf16_gemm_tflops = 784.9,
     .sfu_tops = 0, .launch_overhead_us = 2, .mem_gb = 256,
     .source = "ROCm gpu-specs.rst [S26] (304 CUs, 256 MiB Infinity Cache, the last level on "
               "the memory path); figures from awesomeagents.ai [S27] and stas00 "
               "ml-engineering [S8]; FP32 81.7 non-packed (163.4 packed); no SFU rate and no "
               "measured BW in the reference; launch 2.0 us: MI210's in [B], the only AMD "
               "figure (unconfirmed for CDNA3)"
               "; bf16 GEMM 784.9 TF: stas00 MAMF table [S8] (TunableOp on, 1000 W, torch 2.6.0+rocm6.2.4)"},
    {.name = "mi250x", .label = "AMD Instinct MI250X (both GCDs; each is a separate device)",
     .kind = "gpu", .onchip_kib = 576, .register_kib = 512, .sm_count = 220, .max_threads_per_sm = 2048,
     .mem_bandwidth_gbs = 3277, .measured_bandwidth_gbs = 2 * 1183,
     .cited_bandwidth_gbs = 2 * 1183,
     .cache_mb = 16, .fp32_tflops = 47.9, .bf16_tflops = 383,
     .sfu_tops = 0, .launch_overhead_us = 2, .mem_gb = 128,
     .source = "ROCm gpu-specs.rst [S26] (220 CUs, L2 8 MiB per GCD, no Infinity Cache) and "
               "stas00 ml-engineering [S8]; whole card: one kernel runs on one GCD, see "
               "mi250x-gcd; FP32 47.9 non-packed (1700 MHz unconfirmed); measured BW: "
               "mi250x-gcd's derived 1183 per GCD, x 2; launch 2.0 us: MI210, same GCD, in "
               "[B] gpu-small-kernels"},
    {.name = "mi250x-gcd", .label = "AMD Instinct MI250X, one GCD", .kind = "gpu", .onchip_kib = 576, .register_kib = 512, .sm_count = 110,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 1638, .measured_bandwidth_gbs = 1183, .cited_bandwidth_gbs = 1183,
     .cache_mb = 8, .fp32_tflops = 23.95, .bf16_tflops = 191.5,
     .sfu_tops = 0, .launch_overhead_us = 2, .mem_gb = 64,
     .source = "ROCm gpu-specs.rst [S26] (110 CUs and 8 MiB L2 per GCD) and stas00 "
               "ml-engineering [S8]: the MI250X card halved, as each GCD is a separate "
               "device; measured BW derived, no direct STREAM figure found: the MI210 (the "
               "same GCD, 104 CUs, 1638 GB/s) reaches 1362 on [B] gpu-stream scale (2 GiB "
               "f64, read + write), x FluidX3D's MI250-GCD / MI210 ratio 53% / 61% [S7] = "
               "1183; launch 2.0 us: MI210 in [B] gpu-small-kernels"},
    {.name = "mi210", .label = "AMD Instinct MI210 64GB", .kind = "gpu", .onchip_kib = 576, .register_kib = 512, .sm_count = 104,
     .max_threads_per_sm = 2048, .mem_bandwidth_gbs = 1638, .measured_bandwidth_gbs = 1362, .cited_bandwidth_gbs = 1362,
     .cache_mb = 8, .fp32_tflops = 22.6, .bf16_tflops = 181,
     .sfu_tops = 0, .launch_overhead_us = 2, .graph_launch_overhead_us = 2, .mem_gb = 64,
     .source = "AnandTech MI210 launch table (anandtech.com/show/17326): 104 CUs, 1700 MHz, "
               "FP32 vector 22.6 (non-packed), FP16 matrix 181 (BF16 at the same rate on "
               "CDNA2, as mi250x-gcd's 191.5 x 104/110), 1.6 TB/s (FluidX3D 1638 [S7]), 64 "
               "GB; L2 8 MiB: ROCm gpu-specs.rst [S26]; no SFU rate; measured BW: [B] "
               "gpu-stream/mi210.txt scale, 2 GiB f64 arrays, read + write, 100% "
               "occupancy: 1362 (FluidX3D 61% [S7]); launch 2.0 us eager and graph: [B] "
               "gpu-small-kernels/mi210[_graph].txt"},
};

#define DEVICE_COUNT ((int)(sizeof device_table / sizeof device_table[0]))

/* Number of rows in the built-in table. */
int mb_device_count(void) { return DEVICE_COUNT; }

/* Row i of the built-in table (static storage), or NULL when out of range. */
const mb_device *mb_device_at(int i)
{
    return i >= 0 && i < DEVICE_COUNT ? &device_table[i] : NULL;
}


/* How far a typed id is from a table id: the edit distance, or one more than
 * the distance to the id's prefix of the typed length, so "h100" is close to
 * every "h100-..." row. */
static int id_score(const char *typed, const char *id)
{
    int d = mb_edit_distance(typed, id);
    size_t lt = strlen(typed);
    if (lt < strlen(id) && lt < 63) {
        char prefix[64];
        memcpy(prefix, id, lt);
        prefix[lt] = '\0';
        int dp = mb_edit_distance(typed, prefix) + 1;
        if (dp < d) d = dp;
    }
    return d;
}

/* Writes "a, b, c" (the 1-3 closest ids, ties in table order) into buf, or
 * "" when nothing is close enough. */
static void suggest_ids(const char *typed, char *buf, size_t size)
{
    int score[DEVICE_COUNT], best = 1 << 30;
    for (int i = 0; i < DEVICE_COUNT; i++) {
        score[i] = id_score(typed, device_table[i].name);
        if (score[i] < best) best = score[i];
    }
    int cap = (int)strlen(typed) / 2;
    if (cap < 2) cap = 2;
    buf[0] = '\0';
    if (best > cap) return;
    size_t used = 0;
    int shown = 0;
    for (int s = best; s <= best + 1 && s <= cap && shown < 3; s++)
        for (int i = 0; i < DEVICE_COUNT && shown < 3; i++) {
            if (score[i] != s) continue;
            int w = snprintf(buf + used, size - used, "%s%s", shown ? ", " : "",
                             device_table[i].name);
            if (w < 0 || (size_t)w >= size - used) return;
            used += (size_t)w;
            shown++;
        }
}

/* Looks up a table id (case-insensitive) into *out, or loads a spec file
 * when id_or_path contains '/' or ends in ".ini". An unknown id returns
 * MB_EINPUT naming the closest ids. *out is written only on success. */
int mb_device_find(const char *id_or_path, mb_device *out, mb_err *err)
{
    if (!id_or_path || !*id_or_path)
        return mb_err_set(err, MB_EINPUT, "no device given (run 'membound devices')");
    size_t len = strlen(id_or_path);
    if (strchr(id_or_path, '/') || (len >= 4 && !strcmp(id_or_path + len - 4, ".ini")))
        return mb_device_load_ini(id_or_path, out, err);
    for (int i = 0; i < DEVICE_COUNT; i++) {
        const char *a = device_table[i].name, *b = id_or_path;
        while (*a && tolower((unsigned char)*a) == tolower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) {
            *out = device_table[i];
            return MB_OK;
        }
    }
    char near[256];
    suggest_ids(id_or_path, near, sizeof near);
    if (near[0])
        return mb_err_set(err, MB_EINPUT,
                          "unknown device '%s' (did you mean %s?; run 'membound devices')",
                          id_or_path, near);
    return mb_err_set(err, MB_EINPUT, "unknown device '%s' (run 'membound devices')",
                      id_or_path);
}

/* Bandwidth the model uses, GB/s: measured_bandwidth_gbs when > 0, else the
 * datasheet peak. *source (when non-NULL) is set to a static "measured" or
 * "datasheet". */
double mb_device_bandwidth_gbs(const mb_device *d, const char **source)
{
    if (d->measured_bandwidth_gbs > 0) {
        if (source) *source = d->measured_derived ? "derived" : "measured";
        return d->measured_bandwidth_gbs;
    }
    if (source) *source = "datasheet";
    return d->mem_bandwidth_gbs;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mb_device_derive_bandwidth(const mb_device *d, double *fraction, double *lo, double *hi, int *rows)
{
    enum { N = sizeof device_table / sizeof device_table[0] };
    double f[N];
    int n = 0;
    for (int i = 0; i < N; i++) {
        const mb_device *t = &device_table[i];
        if (!strcmp(t->kind, d->kind) && t->measured_bandwidth_gbs > 0 && t->mem_bandwidth_gbs > 0 &&
            !t->measured_derived)
            f[n++] = t->measured_bandwidth_gbs / t->mem_bandwidth_gbs;
    }
    if (rows) *rows = n;
    if (n == 0 || !(d->mem_bandwidth_gbs > 0)) return 0;
    qsort(f, (size_t)n, sizeof f[0], cmp_double);
    double med = n % 2 ? f[n / 2] : 0.5 * (f[n / 2 - 1] + f[n / 2]);
    if (fraction) *fraction = med;
    if (lo) *lo = f[0];
    if (hi) *hi = f[n - 1];
    return med * d->mem_bandwidth_gbs;
}

/* Last-level cache bytes the traffic model uses: the resident figure when
 * the spec has one, else the nominal size. */
double mb_device_cache_bytes(const mb_device *d)
{
    double mb = d->cache_resident_mb > 0 ? d->cache_resident_mb : d->cache_mb;
    return mb * 1048576.0;
}
