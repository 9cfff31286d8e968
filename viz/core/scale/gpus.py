"""The GPUs kvlab reasons about: memory the driver reports, peak bandwidth and peak compute.

Memory is what ``nvidia-smi`` (``rocm-smi`` for AMD) shows as the total, not the marketing size:
GDDR memory with ECC on loses 6.25% to the check bits (a T4's 16 GiB shows 15,360 MiB), and the
driver and firmware keep a little back on every card (an "80 GB" H100 shows 81,559 MiB). CUDA
itself (``torch.cuda.mem_get_info``, what vLLM multiplies by its utilisation) reports about half a
GiB less again; that difference is left to the reserve for activations and the runtime.

Bandwidth and FLOP/s are the vendors' peak figures, **dense** (NVIDIA's sheets also print a figure
"with sparsity", twice as high, which needs 2:4 structured-sparse weights). Real kernels reach
roughly 70-90% of the bandwidth and 60-80% of the FLOP/s, so the times computed from them are lower
bounds. Each entry names its sources.

What this module does not do: measure anything, or model clocks, power limits or interconnects.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024**2
TB = 1e12  # vendors' bandwidth and FLOP/s use decimal units: 1 TB/s = 10¹² bytes/s
COMPUTE_DTYPES = ("fp16/bf16", "fp8", "tf32")


@dataclass(frozen=True)
class Gpu:
    """One accelerator as a roofline sees it."""

    name: str
    memory_mib: int  # the total the driver reports (nvidia-smi / rocm-smi), MiB
    marketed: str  # the size on the box, for the label
    bandwidth: float  # peak memory bandwidth, bytes/s
    fp16: float  # dense fp16/bf16 tensor-core FLOP/s
    fp8: float | None  # dense fp8 tensor-core FLOP/s (None: no fp8 units, fp8 weights run as fp16)
    tf32: float | None  # dense tf32 tensor-core FLOP/s (None: no tf32 units)
    source: str

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB

    def peak_flops(self, compute: str) -> float:
        """Dense FLOP/s of the tensor-core format ``compute`` (fp16/bf16, fp8 or tf32, as
        :func:`compute_dtype` picks it; a format the GPU lacks falls back to its fp16 rate)."""
        return {"fp8": self.fp8, "tf32": self.tf32}.get(compute) or self.fp16

    def ridge(self, compute: str) -> float:
        """Arithmetic intensity (FLOPs per byte) where memory time equals compute time."""
        return self.peak_flops(compute) / self.bandwidth

    @property
    def label(self) -> str:
        return f"{self.name} ({self.marketed}, {self.memory_mib:,} MiB usable)"


def compute_dtype(gpu: Gpu, weights_dtype: str) -> str:
    """The tensor-core format products run in: fp8 weights on fp8 units where the GPU has them,
    fp32 weights on tf32 units (the fastest fp32-input path), and everything else, including
    int8/int4 weight-only quantisation, dequantised to fp16/bf16."""
    if weights_dtype == "fp8" and gpu.fp8:
        return "fp8"
    if weights_dtype == "fp32" and gpu.tf32:
        return "tf32"
    return "fp16/bf16"


# One entry per card. Memory: nvidia-smi's "memory.total" (sources per line). Peak figures: the
# vendor's data sheet, dense (the sheets' sparsity figures halved where only those are printed).
GPUS: tuple[Gpu, ...] = (
    # T4: 16 GB GDDR6; nvidia-smi shows 15,360 MiB with ECC on (modal-labs/modal-client PR #2797 lists
    # the totals of T4, L4, A10, L40S, A100 and H100); drivers of 2021 showed 15,079 MiB (NVIDIA
    # developer forum, "NVIDIA T4 has only 15g of memory?"). NVIDIA T4 data sheet: 320 GB/s,
    # 65 TFLOPS fp16 mixed precision; no bf16, tf32 or fp8 units.
    Gpu("T4", 15_360, "16 GB", 320e9, 65 * TB, None, None,
        "nvidia-smi total (modal-labs/modal-client #2797); NVIDIA T4 data sheet"),
    # L4: 24 GB GDDR6, nvidia-smi 23,034 MiB (modal #2797; speaches-ai/speaches #438). NVIDIA L4 data
    # sheet: 300 GB/s; fp16/bf16 242 TFLOPS, fp8 485, tf32 120 with sparsity -> 121 / 242.5 / 60 dense.
    Gpu("L4", 23_034, "24 GB", 300e9, 121 * TB, 242.5 * TB, 60 * TB,
        "nvidia-smi total (modal-labs/modal-client #2797); NVIDIA L4 data sheet (dense = half the sparse figures)"),
    # A10: 24 GB GDDR6, nvidia-smi 23,028 MiB (modal #2797; NVML total 24,146,608,128 bytes in
    # mayooot/detect-gpu #3). NVIDIA A10 data sheet: 600 GB/s, bf16 125 TFLOPS dense, tf32 62.5 dense.
    Gpu("A10", 23_028, "24 GB", 600e9, 125 * TB, None, 62.5 * TB,
        "nvidia-smi total (modal-labs/modal-client #2797); NVIDIA A10 data sheet"),
    # RTX 4090: 24 GB GDDR6X without ECC, nvidia-smi 24,564 MiB (RLinf/RLinf #255). NVIDIA Ada
    # Lovelace architecture whitepaper: 1,008 GB/s; fp16 with fp32 accumulate 165.2 TFLOPS dense
    # (330.4 with fp16 accumulate), fp8 330.3 dense, tf32 82.6 dense.
    Gpu("RTX 4090", 24_564, "24 GB", 1_008e9, 165.2 * TB, 330.3 * TB, 82.6 * TB,
        "nvidia-smi total (RLinf/RLinf #255); NVIDIA Ada Lovelace whitepaper, appendix A"),
    # A100 40GB SXM: HBM2, nvidia-smi 40,960 MiB (modal #2797). NVIDIA A100 data sheet: 1,555 GB/s,
    # bf16 312 TFLOPS dense, tf32 156 dense; no fp8.
    Gpu("A100 40GB", 40_960, "40 GB", 1_555e9, 312 * TB, None, 156 * TB,
        "nvidia-smi total (modal-labs/modal-client #2797); NVIDIA A100 data sheet (SXM)"),
    # L40S: 48 GB GDDR6 with ECC, nvidia-smi 46,068 MiB (modal #2797; akash-network/provider-configs
    # #99). NVIDIA L40S data sheet: 864 GB/s; bf16 362.05 TFLOPS dense (733 sparse), fp8 733 dense, tf32 183 dense.
    Gpu("L40S", 46_068, "48 GB", 864e9, 362.05 * TB, 733 * TB, 183 * TB,
        "nvidia-smi total (modal-labs/modal-client #2797); NVIDIA L40S data sheet"),
    # A100 80GB SXM: HBM2e, nvidia-smi 81,920 MiB (modal #2797). NVIDIA A100 data sheet: 2,039 GB/s
    # (SXM), bf16 312 TFLOPS dense, tf32 156 dense.
    Gpu("A100 80GB", 81_920, "80 GB", 2_039e9, 312 * TB, None, 156 * TB,
        "nvidia-smi total (modal-labs/modal-client #2797); NVIDIA A100 data sheet (SXM)"),
    # H100 SXM 80GB: HBM3, nvidia-smi 81,559 MiB (modal #2797; NVIDIA/nccl #1264). NVIDIA H100 data
    # sheet (SXM): 3.35 TB/s; bf16 1,979 TFLOPS, fp8 3,958, tf32 989 with sparsity -> 989.4 / 1,978.9 / 494.7 dense.
    Gpu("H100 SXM", 81_559, "80 GB", 3.35e12, 989.4 * TB, 1_978.9 * TB, 494.7 * TB,
        "nvidia-smi total (modal-labs/modal-client #2797; NVIDIA/nccl #1264); NVIDIA H100 data sheet (SXM)"),
    # H200 SXM: 141 GB HBM3e, nvidia-smi 143,771 MiB (many public nvidia-smi logs). NVIDIA H200 data
    # sheet: 4.8 TB/s; compute as the H100 SXM.
    Gpu("H200 SXM", 143_771, "141 GB", 4.8e12, 989.4 * TB, 1_978.9 * TB, 494.7 * TB,
        "nvidia-smi total (public nvidia-smi logs); NVIDIA H200 data sheet (SXM)"),
    # B200: "180 GB" HBM3e in HGX B200, nvidia-smi 183,359 MiB (NVIDIA/TensorRT-LLM #10278). NVIDIA
    # HGX B200 sheet per GPU: 8 TB/s; bf16 2.25 PFLOPS, fp8 4.5, tf32 1.1 dense (twice with sparsity).
    # pytorch/ao #4002 measures the bus as 7.68 TB/s; the vendor's 8 TB/s is kept here.
    Gpu("B200", 183_359, "180 GB", 8e12, 2_250 * TB, 4_500 * TB, 1_100 * TB,
        "nvidia-smi total (NVIDIA/TensorRT-LLM #10278); NVIDIA HGX B200 data sheet, per GPU"),
    # MI300X: 192 GB HBM3, rocm-smi "VRAM Total Memory" 206,141,652,992 bytes = 196,592 MiB
    # (ROCm/legacy-rocm-build #4750). AMD Instinct MI300X data sheet: 5.3 TB/s; fp16/bf16 1,307.4
    # TFLOPS dense (2,614.9 sparse), fp8 2,614.9 dense, tf32 653.7 dense.
    Gpu("MI300X", 196_592, "192 GB", 5.3e12, 1_307.4 * TB, 2_614.9 * TB, 653.7 * TB,
        "rocm-smi total (ROCm/legacy-rocm-build #4750); AMD Instinct MI300X data sheet"),
)
GPU_BY_NAME = {gpu.name: gpu for gpu in GPUS}
DEFAULT_GPU = "H100 SXM"


def gpu_named(name: str) -> Gpu:
    """The GPU called ``name`` (case and spaces ignored: "h100", "H100 SXM", "a100-80gb"); ValueError
    naming the choices otherwise. A bare family name picks its first entry ("A100" is the 40 GB card)."""
    def key(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    wanted = key(name)
    for gpu in GPUS:
        if key(gpu.name) == wanted:
            return gpu
    for gpu in GPUS:
        if wanted and key(gpu.name).startswith(wanted):
            return gpu
    raise ValueError(f"no GPU called '{name[:40]}'; kvlab knows {', '.join(gpu.name for gpu in GPUS)}")
