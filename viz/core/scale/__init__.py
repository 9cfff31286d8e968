"""Memory and speed at real scale: model configs, the KV cache's bytes, GPUs and the roofline."""
